import * as tf from "@tensorflow/tfjs";
import { kernel } from "./common";

/**
 * An Embedding's lookup (GatherV2 on axis 0, no batch dimensions): the rows copied by id. An id
 * out of range goes to the stock kernel, which refuses it with its own message.
 */
const gatherRows = kernel("GatherV2", ({ inputs, backend, attrs }) => {
  const { x, indices } = inputs as { x: tf.TensorInfo; indices: tf.TensorInfo };
  if (x.dtype !== "float32" || indices.dtype !== "int32" || x.shape.length === 0 || Number(attrs.batchDims ?? 0) !== 0)
    return null;
  if (tf.util.parseAxisParam(attrs.axis as number, x.shape)[0] !== 0) return null;
  const ids = backend.intValues(indices);
  const rows = x.shape[0]!;
  for (let i = 0; i < ids.length; i++) if (ids[i]! < 0 || ids[i]! >= rows) return null;
  const inner = tf.util.sizeFromShape(x.shape.slice(1));
  const out = backend.output([...indices.shape, ...x.shape.slice(1)]);
  backend.addon.gatherRows(backend.values(x), ids, out.values, ids.length, inner, rows);
  return out.info;
});

/**
 * The gather's gradient (UnsortedSegmentSum of one id per row): each row added to its id's, in
 * one pass. The stock kernel masks and reduces once per segment, which for a 10,000-word
 * vocabulary is 10,000 passes over the batch's rows.
 */
const segmentSum = kernel("UnsortedSegmentSum", ({ inputs, backend, attrs }) => {
  const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
  const segments = Number(attrs.numSegments);
  if (
    x.dtype !== "float32" ||
    segmentIds.dtype !== "int32" ||
    x.shape.length === 0 ||
    segmentIds.shape.length !== 1 ||
    segmentIds.shape[0] !== x.shape[0]
  )
    return null;
  const inner = tf.util.sizeFromShape(x.shape.slice(1));
  const out = backend.output([segments, ...x.shape.slice(1)]);
  backend.addon.segmentSum(backend.values(x), backend.intValues(segmentIds), out.values, x.shape[0]!, inner, segments);
  return out.info;
});

export const gatherKernels: tf.KernelConfig[] = [gatherRows, segmentSum];
