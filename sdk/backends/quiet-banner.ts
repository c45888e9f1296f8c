import * as tf from "@tensorflow/tfjs";

const QUIETED = Symbol.for("meshtrain.quietCpuBanner");

interface FactoryEntry {
  factory: () => unknown;
  [QUIETED]?: true;
}

/**
 * TF.js's cpu backend prints "Hi, looks like you are running TensorFlow.js in Node.js ...
 * install our node backend" on its first tensor. With meshtrain the driver only builds models
 * and the workers run the backend meshtrain chose (and say which in their notes), so the advice
 * is noise in every cell and script. The engine makes a new backend each time it starts one;
 * its factory is wrapped so that every cpu backend starts with the banner marked as shown.
 */
export function quietCpuBanner(): void {
  const entry = (tf.engine() as unknown as { registryFactory: Record<string, FactoryEntry | undefined> })
    .registryFactory.cpu;
  if (!entry || entry[QUIETED]) return;
  const make = entry.factory;
  entry.factory = () => {
    const backend = make();
    if (backend && typeof backend === "object" && "firstUse" in backend)
      (backend as { firstUse: boolean }).firstUse = false;
    return backend;
  };
  entry[QUIETED] = true;
  const running = tf.engine().registry.cpu as { firstUse?: boolean } | undefined;
  if (running && "firstUse" in running) running.firstUse = false;
}
