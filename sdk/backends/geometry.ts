import * as tf from "@tensorflow/tfjs";

type Shape4 = [number, number, number, number];
type Attrs = tf.NamedAttrMap;

/** A convolution's geometry from a kernel's attributes, as TF.js's own kernels compute it. */
export function convInfo(
  inShape: readonly number[],
  filterShape: readonly number[],
  attrs: Attrs,
  depthwise = false,
): tf.backend_util.Conv2DInfo {
  return tf.backend_util.computeConv2DInfo(
    [...inShape] as Shape4,
    [...filterShape] as Shape4,
    attrs.strides as number | [number, number],
    (attrs.dilations as number | [number, number] | undefined) ?? 1,
    attrs.pad as "same" | "valid" | number,
    attrs.dimRoundingMode as "floor" | "round" | "ceil" | undefined,
    depthwise,
  );
}

/** A pooling window's geometry from a kernel's attributes. */
export function poolInfo(shape: readonly number[], attrs: Attrs): tf.backend_util.Conv2DInfo {
  return tf.backend_util.computePool2DInfo(
    [...shape] as Shape4,
    attrs.filterSize as number | [number, number],
    attrs.strides as number | [number, number],
    1,
    attrs.pad as "same" | "valid" | number,
    attrs.dimRoundingMode as "floor" | "round" | "ceil" | undefined,
  );
}
