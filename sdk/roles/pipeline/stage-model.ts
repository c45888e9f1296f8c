import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../../errors/errors";

/**
 * The part of a Sequential model a stage holds: its layers' configs, with the first given the
 * input shape it receives from the stage before. Built only from TF.js's registered classes.
 */
export function stageTopology(topology: Record<string, unknown>, from: number, to: number, inputShape: readonly number[], index: number): Record<string, unknown> {
  const cfg = topology.config as { name?: string; layers?: Array<{ class_name: string; config: Record<string, unknown> }> } | undefined;
  if (topology.class_name !== "Sequential" || !cfg || !Array.isArray(cfg.layers)) {
    throw new ModelError(`model, pipeline and hybrid strategies split Sequential models; this one is a ${String(topology.class_name)}`, {
      hint: "build the model with tf.sequential, or train it with the data strategy",
    });
  }
  const layers = cfg.layers.slice(from, to).map((l) => ({ class_name: l.class_name, config: { ...l.config } }));
  if (layers.length === 0) throw new ModelError(`stage ${index} holds no layers ([${from}, ${to}))`);
  for (const l of layers) {
    delete l.config.batch_input_shape;
    delete l.config.input_shape;
  }
  layers[0]!.config.batch_input_shape = [null, ...inputShape];
  return { ...topology, config: { ...cfg, name: `${cfg.name ?? "model"}_stage${index}`, layers } };
}

/**
 * Dropout layers draw the same masks for a micro-batch's forward pass and its recomputation in
 * the backward pass (GPipe recomputes activations): their seed is set per step and micro-batch.
 */
export function seedDropout(model: tf.LayersModel, step: number, micro: number): void {
  model.layers.forEach((l, i) => {
    if (l.getClassName() === "Dropout" || l.getClassName() === "SpatialDropout1D") {
      (l as unknown as { seed: number }).seed = (step * 1_000_003 + micro * 9_176 + i * 31) >>> 0;
    }
  });
}
