import * as tf from "@tensorflow/tfjs";
import { poolInfo } from "../../geometry";
import { allFloat32, kernel } from "./common";
import { convParams } from "./conv";

export const poolKernels: tf.KernelConfig[] = [
  kernel("MaxPool", ({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: tf.TensorInfo };
    if (!allFloat32(x) || x.shape.length !== 4) return null;
    const c = poolInfo(x.shape, attrs);
    const out = backend.output([c.batchSize, c.outHeight, c.outWidth, c.outChannels]);
    backend.addon.maxPool(backend.values(x), out.values, convParams(c));
    return out.info;
  }),
  kernel("MaxPoolGrad", ({ inputs, backend, attrs }) => {
    const { dy, input } = inputs as { dy: tf.TensorInfo; input: tf.TensorInfo };
    if (!allFloat32(dy, input)) return null;
    const c = poolInfo(input.shape, attrs);
    const out = backend.output([...input.shape]);
    backend.addon.maxPoolGrad(backend.values(dy), backend.values(input), out.values, convParams(c));
    return out.info;
  }),
  kernel("AvgPool", ({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: tf.TensorInfo };
    if (!allFloat32(x) || x.shape.length !== 4) return null;
    const c = poolInfo(x.shape, attrs);
    const out = backend.output([c.batchSize, c.outHeight, c.outWidth, c.outChannels]);
    backend.addon.avgPool(backend.values(x), out.values, convParams(c));
    return out.info;
  }),
  kernel("AvgPoolGrad", ({ inputs, backend, attrs }) => {
    const { dy, input } = inputs as { dy: tf.TensorInfo; input: tf.TensorInfo };
    if (!allFloat32(dy, input)) return null;
    const c = poolInfo(input.shape, attrs);
    const out = backend.output([...input.shape]);
    backend.addon.avgPoolGrad(backend.values(dy), out.values, convParams(c));
    return out.info;
  }),
];
