import * as tf from "@tensorflow/tfjs";
import { convInfo } from "../../geometry";
import { ACTIVATION, allFloat32, kernel, type Attrs } from "./common";
import type { NativeBackend } from "../backend";
import { CONV_COLUMNS_CAP } from "../../../plan/memory";

type Info = tf.backend_util.Conv2DInfo;

/** The geometry the C kernels take: see P_* in native/src/kernels.h. */
export function convParams(c: Info): Int32Array {
  return Int32Array.from([
    c.batchSize,
    c.inHeight,
    c.inWidth,
    c.inChannels,
    c.outHeight,
    c.outWidth,
    c.outChannels,
    c.filterHeight,
    c.filterWidth,
    c.strideHeight,
    c.strideWidth,
    c.dilationHeight,
    c.dilationWidth,
    c.padInfo.top,
    c.padInfo.left,
  ]);
}

function channelsLast(attrs: Attrs): boolean {
  return attrs.dataFormat === undefined || attrs.dataFormat === "NHWC" || attrs.dataFormat === "channelsLast";
}

/** The column buffer for a batch's convolution, within CONV_COLUMNS_CAP (the plan's memory estimate counts it). */
export function scratchFor(backend: { scratch(length: number): Float32Array }, c: Info): Float32Array {
  const perImage = c.outHeight * c.outWidth * c.filterHeight * c.filterWidth * c.inChannels;
  const cap = Math.max(perImage, CONV_COLUMNS_CAP);
  return backend.scratch(Math.max(1, Math.min(perImage * c.batchSize, cap)));
}

function conv2d(
  backend: NativeBackend,
  x: tf.TensorInfo,
  filter: tf.TensorInfo,
  attrs: Attrs,
): { info: tf.TensorInfo; values: Float32Array; c: Info } {
  const c = convInfo(x.shape, filter.shape, attrs);
  const out = backend.output([c.batchSize, c.outHeight, c.outWidth, c.outChannels]);
  backend.addon.conv2d(backend.values(x), backend.values(filter), out.values, convParams(c), scratchFor(backend, c));
  return { ...out, c };
}

export const convKernels: tf.KernelConfig[] = [
  kernel("Conv2D", ({ inputs, backend, attrs }) => {
    const { x, filter } = inputs as { x: tf.TensorInfo; filter: tf.TensorInfo };
    if (!allFloat32(x, filter) || !channelsLast(attrs)) return null;
    return conv2d(backend, x, filter, attrs).info;
  }),
  kernel("FusedConv2D", ({ inputs, backend, attrs }) => {
    const { x, filter, bias, preluActivationWeights } = inputs as Record<string, tf.TensorInfo | undefined>;
    const act = ACTIVATION[(attrs.activation as string | undefined) ?? "linear"];
    if (
      !x ||
      !filter ||
      preluActivationWeights ||
      act === undefined ||
      !allFloat32(x, filter, bias) ||
      !channelsLast(attrs)
    )
      return null;
    const outChannels = filter.shape[3]!;
    if (bias && tf.util.sizeFromShape(bias.shape) !== outChannels) return null;
    const r = conv2d(backend, x, filter, attrs);
    const rows = r.c.batchSize * r.c.outHeight * r.c.outWidth;
    backend.addon.biasActivation(
      r.values,
      bias ? backend.values(bias) : null,
      rows,
      outChannels,
      act,
      Number(attrs.leakyreluAlpha ?? 0.2),
    );
    return r.info;
  }),
  kernel("Conv2DBackpropInput", ({ inputs, backend, attrs }) => {
    const { dy, filter } = inputs as { dy: tf.TensorInfo; filter: tf.TensorInfo };
    if (!allFloat32(dy, filter) || !channelsLast(attrs)) return null;
    const c = convInfo(attrs.inputShape as number[], filter.shape, { ...attrs, dilations: 1 });
    const out = backend.output([...(attrs.inputShape as number[])]);
    backend.addon.conv2dBackpropInput(
      backend.values(dy),
      backend.values(filter),
      out.values,
      convParams(c),
      scratchFor(backend, c),
    );
    return out.info;
  }),
  kernel("Conv2DBackpropFilter", ({ inputs, backend, attrs }) => {
    const { x, dy } = inputs as { x: tf.TensorInfo; dy: tf.TensorInfo };
    if (!allFloat32(x, dy) || !channelsLast(attrs)) return null;
    const c = convInfo(x.shape, attrs.filterShape as number[], { ...attrs, dilations: 1 });
    const out = backend.output([...(attrs.filterShape as number[])]);
    backend.addon.conv2dBackpropFilter(
      backend.values(x),
      backend.values(dy),
      out.values,
      convParams(c),
      scratchFor(backend, c),
    );
    return out.info;
  }),
  kernel("DepthwiseConv2dNative", ({ inputs, backend, attrs }) => {
    const { x, filter } = inputs as { x: tf.TensorInfo; filter: tf.TensorInfo };
    if (!allFloat32(x, filter) || !channelsLast(attrs)) return null;
    const c = convInfo(x.shape, filter.shape, attrs, true);
    const out = backend.output([c.batchSize, c.outHeight, c.outWidth, c.outChannels]);
    backend.addon.depthwiseConv2d(
      backend.values(x),
      backend.values(filter),
      out.values,
      convParams(c),
      filter.shape[3]!,
    );
    return out.info;
  }),
  kernel("DepthwiseConv2dNativeBackpropInput", ({ inputs, backend, attrs }) => {
    const { dy, filter } = inputs as { dy: tf.TensorInfo; filter: tf.TensorInfo };
    if (!allFloat32(dy, filter)) return null;
    const c = convInfo(attrs.inputShape as number[], filter.shape, attrs, true);
    const out = backend.output([...(attrs.inputShape as number[])]);
    backend.addon.depthwiseBackpropInput(
      backend.values(dy),
      backend.values(filter),
      out.values,
      convParams(c),
      filter.shape[3]!,
    );
    return out.info;
  }),
  kernel("DepthwiseConv2dNativeBackpropFilter", ({ inputs, backend, attrs }) => {
    const { x, dy } = inputs as { x: tf.TensorInfo; dy: tf.TensorInfo };
    if (!allFloat32(x, dy)) return null;
    const fs = attrs.filterShape as number[];
    const c = convInfo(x.shape, fs, attrs, true);
    const out = backend.output([...fs]);
    backend.addon.depthwiseBackpropFilter(backend.values(x), backend.values(dy), out.values, convParams(c), fs[3]!);
    return out.info;
  }),
];
