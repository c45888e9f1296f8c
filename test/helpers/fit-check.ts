import assert from "node:assert/strict";
import { datasets, type Cluster } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "./models";
import { modelFitReference } from "./reference";

/**
 * Two epochs of SGD on the cluster and with model.fit on the same batches; the largest relative
 * difference of their weights. A script that drives a cluster (fromEnv's rank 0) prints it.
 */
export async function differenceFromModelFit(c: Cluster, o: { size: number; seed: number }): Promise<number> {
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: o.size, seed: o.seed });
  const [m, ref] = [smallClassifier(6, 3), smallClassifier(6, 3)];
  await c.fit(m, ds, { epochs: 2, batchSize: 24, shuffle: false, optimizer: "sgd", progress: false });
  await modelFitReference(ref, ds, { epochs: 2, batchSize: 24, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
  return maxRelativeDifference(m, ref);
}

/** The cluster trains as model.fit does (relative difference below 1e-4): the check every launcher's test makes of the workers it started. */
export async function fitsLikeModelFit(c: Cluster, o: { size: number; seed: number }): Promise<void> {
  const d = await differenceFromModelFit(c, o);
  assert.ok(d < 1e-4, `relative difference ${d}`);
}
