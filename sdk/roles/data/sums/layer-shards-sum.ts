import * as tf from "@tensorflow/tfjs";
import type { NativeBackend } from "../../../backends/native/backend";
import type { FlatRanges } from "../../../model/flat-state";
import { readWeights } from "../../../model/model-io";
import type { MessageOf } from "../../../protocol/messages";
import type { Tensorlike } from "../../../protocol/tensor";
import type { Feed } from "../../../compute/objective";
import type { HostIO, RoleReply } from "../../role";
import type { OptimizerState, UpdateRule } from "../../../compute/tfjs-update";
import { makeUpdateRule } from "../../../compute/update-rule";
import { evaluateReplica } from "../evaluate-gathered";
import { LayerShards } from "../layer-shards";
import { layerShardsStep, shardSet } from "../layer-shards-step";
import { StepBack } from "../step-back";
import type { StepResult } from "../step-result";
import type { EvaluationSums, GradientSum, ReplicaParts, StepInput } from "./gradient-sum";

/**
 * ZeRO stages 2 and 3 (see LayerShards): this replica's part of every layer's gradient and
 * optimizer state (stage 3: of its weights too), each layer's collectives run inside the
 * native step's passes. It never steps back: an elastic fit that loses a member re-loads every
 * one from a checkpoint.
 */
export class LayerShardsSum implements GradientSum {
  readonly kind: "zero-2" | "zero-3";
  private readonly layers: LayerShards;
  /** Counts the steps taken (a rewind to where it is answers with it); the update rule it would restore holds nothing. */
  private readonly back: StepBack;
  private readonly none: UpdateRule;

  constructor(
    private readonly p: ReplicaParts,
    stage: 2 | 3,
  ) {
    this.kind = stage === 2 ? "zero-2" : "zero-3";
    this.none = makeUpdateRule([], p.load.optimizer);
    this.back = new StepBack(p.r, this.none, false);
    const bucketBytes = p.load.sum && "bucketBytes" in p.load.sum ? (p.load.sum.bucketBytes ?? 0) : 0;
    const o = { bucketBytes, overlap: p.load.overlap ?? false, parts: p.load.weights === "parts" };
    this.layers = LayerShards.create(stage, p.r, p.load.optimizer, p.io, tf.backend() as NativeBackend, p.hook, o);
  }

  step(s: StepInput, io: HostIO): Promise<StepResult> {
    return layerShardsStep(
      this.layers,
      this.p.r,
      s.weight,
      s.x,
      s.y,
      io,
      s.step,
      s.learningRate,
      this.p.load.accumulate ?? 1,
    );
  }

  async rewind(msg: MessageOf<"rewind">): Promise<number> {
    if (msg.to === undefined) return this.back.taken;
    if (msg.to !== this.back.taken) this.p.hook.clear();
    return this.back.rewind(msg.to);
  }

  /** Under ZeRO-3 gathered bucket by bucket: a collective every replica is asked for at once. */
  async weights(): Promise<Tensorlike[]> {
    return this.layers.stage === 3 ? this.layers.weightsOf(this.p.r.model) : readWeights(this.p.r.model);
  }

  exportState(): Promise<OptimizerState> {
    return this.layers.state().export();
  }

  importState(state: OptimizerState): Promise<void> {
    return this.layers.state().import(state);
  }

  async stateRanges(): Promise<FlatRanges> {
    return this.layers.state().ranges;
  }

  evaluate(x: Feed, y: Feed, msg: MessageOf<"evaluate">): Promise<EvaluationSums> {
    return evaluateReplica(this.p.r, this.layers, x, y, msg);
  }

  awaiting(): FlatRanges | undefined {
    return this.layers.awaitingShard ? this.layers.ownRanges() : undefined;
  }

  setShard(msg: MessageOf<"setShard">, attachments: readonly Tensorlike[]): Promise<RoleReply> {
    return shardSet(this.layers, msg, attachments);
  }

  dispose(): void {
    this.none.dispose();
    this.layers.dispose();
  }
}
