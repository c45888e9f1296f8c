import * as tf from "@tensorflow/tfjs";
import { MathBackendCPU } from "@tensorflow/tfjs-backend-cpu";
import { convInfo, poolInfo } from "../geometry";

/**
 * meshtrain's kernels for the wasm backend, the fallback where the native kernels cannot be
 * built: what wasm lacks for training, and what it does slowly.
 * - transposed matmuls become a wasm Transpose plus wasm's fast plain matmul;
 * - the convolution filter gradient is computed by wasm's forward convolution;
 * - every other kernel wasm lacks runs TF.js's cpu kernel on copies of its inputs.
 */

type Backend = tf.KernelBackend & {
  readSync(dataId: tf.DataId): tf.backend_util.BackendValues;
  makeOutput(
    shape: number[],
    dtype: tf.DataType,
    memoryOffset?: number,
    values?: tf.backend_util.BackendValues,
  ): tf.TensorInfo;
  disposeData(dataId: tf.DataId, force?: boolean): boolean;
};
type Args = { inputs: tf.NamedTensorInfoMap; backend: Backend; attrs: tf.NamedAttrMap };

const WASM = "wasm";

function wasmKernel(name: string): tf.KernelFunc {
  const k = tf.getKernel(name, WASM);
  if (!k) throw new Error(`the wasm backend has no "${name}" kernel`);
  return k.kernelFunc;
}

function call(name: string, args: Args): tf.TensorInfo {
  return wasmKernel(name)(args as unknown as Parameters<tf.KernelFunc>[0]) as tf.TensorInfo;
}

function transposeLastTwo(t: tf.TensorInfo, backend: Backend): tf.TensorInfo {
  const r = t.shape.length;
  const perm = [...Array(r).keys()];
  [perm[r - 2], perm[r - 1]] = [perm[r - 1]!, perm[r - 2]!];
  return call("Transpose", { inputs: { x: t }, backend, attrs: { perm } });
}

/** Matmul kernels with transposes done as an explicit Transpose, then the untransposed kernel. */
function untransposed(name: "BatchMatMul" | "_FusedMatMul"): tf.KernelConfig {
  const config = tf.getKernel(name, WASM)!;
  const original = config.kernelFunc;
  return {
    // Keep the original's setupFunc: it binds the wasm function the kernel calls.
    ...config,
    kernelFunc: (params) => {
      const { inputs, backend, attrs } = params as unknown as Args;
      if (!attrs.transposeA && !attrs.transposeB) return original(params);
      const temps: tf.TensorInfo[] = [];
      let { a, b } = inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      if (attrs.transposeA) temps.push((a = transposeLastTwo(a, backend)));
      if (attrs.transposeB) temps.push((b = transposeLastTwo(b, backend)));
      const out = original({
        inputs: { ...inputs, a, b },
        backend,
        attrs: { ...attrs, transposeA: false, transposeB: false },
      } as Parameters<tf.KernelFunc>[0]);
      for (const t of temps) backend.disposeData(t.dataId);
      return out;
    },
  };
}

/**
 * dW[kh,kw,ci,co] = sum over n, oh, ow of x[n, oh*s+kh, ow*s+kw, ci] * dy[n, oh, ow, co], which is
 * a forward convolution of x (channels as batch, batch as channels) with dy as the filter,
 * dilated by the stride.
 */
const conv2dBackpropFilter: tf.KernelConfig = {
  kernelName: "Conv2DBackpropFilter",
  backendName: WASM,
  kernelFunc: (params) => {
    const { inputs, backend, attrs } = params as unknown as Args;
    const { x, dy } = inputs as { x: tf.TensorInfo; dy: tf.TensorInfo };
    const filterShape = attrs.filterShape as [number, number, number, number];
    const c = convInfo(x.shape, filterShape, { ...attrs, dilations: 1 });
    const [kh, kw] = filterShape;
    const xT = call("Transpose", { inputs: { x }, backend, attrs: { perm: [3, 1, 2, 0] } });
    const dyT = call("Transpose", { inputs: { x: dy }, backend, attrs: { perm: [1, 2, 0, 3] } });
    const p = c.padInfo;
    const conv = call("Conv2D", {
      inputs: { x: xT, filter: dyT },
      backend,
      attrs: {
        strides: 1,
        dilations: [c.strideHeight, c.strideWidth],
        pad: [
          [0, 0],
          [p.top, p.bottom],
          [p.left, p.right],
          [0, 0],
        ],
        dataFormat: "NHWC",
      },
    });
    const cropped = call("Slice", {
      inputs: { x: conv },
      backend,
      attrs: { begin: [0, 0, 0, 0], size: [conv.shape[0]!, kh, kw, conv.shape[3]!] },
    });
    const out = call("Transpose", { inputs: { x: cropped }, backend, attrs: { perm: [1, 2, 0, 3] } });
    for (const t of [xT, dyT, conv, cropped]) backend.disposeData(t.dataId);
    return out;
  },
};

/**
 * With unit strides, the input gradient is a forward convolution of dy with the filter turned
 * 180 degrees and its channels swapped, padded by (kernel - 1 - padding). Other strides keep
 * wasm's own kernel.
 */
function conv2dBackpropInput(): tf.KernelConfig {
  const config = tf.getKernel("Conv2DBackpropInput", WASM)!;
  return {
    ...config,
    kernelFunc: (params) => {
      const { inputs, backend, attrs } = params as unknown as Args;
      const { dy, filter } = inputs as { dy: tf.TensorInfo; filter: tf.TensorInfo };
      const inputShape = attrs.inputShape as [number, number, number, number];
      const c = convInfo(inputShape, filter.shape, { ...attrs, dilations: 1 });
      const p = c.padInfo;
      const [kh, kw] = [c.filterHeight, c.filterWidth];
      const pads = [kh - 1 - p.top, kh - 1 - p.bottom, kw - 1 - p.left, kw - 1 - p.right];
      if (c.strideHeight !== 1 || c.strideWidth !== 1 || pads.some((x) => x < 0)) return config.kernelFunc(params);
      const flipped = call("Reverse", { inputs: { x: filter }, backend, attrs: { dims: [0, 1] } });
      const swapped = call("Transpose", { inputs: { x: flipped }, backend, attrs: { perm: [0, 1, 3, 2] } });
      const out = call("Conv2D", {
        inputs: { x: dy, filter: swapped },
        backend,
        attrs: {
          strides: 1,
          dilations: 1,
          pad: [
            [0, 0],
            [pads[0]!, pads[1]!],
            [pads[2]!, pads[3]!],
            [0, 0],
          ],
          dataFormat: "NHWC",
        },
      });
      for (const t of [flipped, swapped]) backend.disposeData(t.dataId);
      return out;
    },
  };
}

/** Max-pool gradient in one pass over host copies: dy goes to each window's first maximum. */
const maxPoolGrad: tf.KernelConfig = {
  kernelName: "MaxPoolGrad",
  backendName: WASM,
  kernelFunc: (params) => {
    const { inputs, backend, attrs } = params as unknown as Args;
    const { dy, input } = inputs as { dy: tf.TensorInfo; input: tf.TensorInfo };
    const c = poolInfo(input.shape, attrs);
    const x = backend.readSync(input.dataId) as Float32Array;
    const d = backend.readSync(dy.dataId) as Float32Array;
    const dx = new Float32Array(x.length);
    const { inHeight: H, inWidth: W, inChannels: C, outHeight: OH, outWidth: OW } = c;
    for (let n = 0; n < c.batchSize; n++)
      for (let oh = 0; oh < OH; oh++)
        for (let ow = 0; ow < OW; ow++)
          for (let ch = 0; ch < C; ch++) {
            let best = -Infinity;
            let at = -1;
            for (let i = 0; i < c.filterHeight; i++) {
              const ih = oh * c.strideHeight - c.padInfo.top + i * c.dilationHeight;
              if (ih < 0 || ih >= H) continue;
              for (let j = 0; j < c.filterWidth; j++) {
                const iw = ow * c.strideWidth - c.padInfo.left + j * c.dilationWidth;
                if (iw < 0 || iw >= W) continue;
                const idx = ((n * H + ih) * W + iw) * C + ch;
                if (x[idx]! > best) {
                  best = x[idx]!;
                  at = idx;
                }
              }
            }
            if (at >= 0) dx[at]! += d[((n * OH + oh) * OW + ow) * C + ch]!;
          }
    return backend.makeOutput([...input.shape], "float32", undefined, dx);
  },
};

let cpu: MathBackendCPU | undefined;

/** A kernel wasm lacks, run by TF.js's cpu kernel on copies of the inputs. */
function viaCpu(config: tf.KernelConfig): tf.KernelConfig {
  return {
    kernelName: config.kernelName,
    backendName: WASM,
    kernelFunc: (params) => {
      const { inputs, backend, attrs } = params as unknown as Args;
      cpu ??= new MathBackendCPU();
      const host = cpu;
      const copies: tf.NamedTensorInfoMap = {};
      for (const [k, t] of Object.entries(inputs)) {
        if (t)
          copies[k] = host.makeTensorInfo(
            [...t.shape],
            t.dtype,
            backend.readSync(t.dataId) as tf.backend_util.BackendValues,
          );
      }
      const result = config.kernelFunc({ inputs: copies, backend: host, attrs } as Parameters<tf.KernelFunc>[0]);
      const outs = Array.isArray(result) ? result : [result];
      const back = outs.map((o) => backend.makeOutput([...o.shape], o.dtype, undefined, host.readSync(o.dataId)));
      for (const t of [...Object.values(copies), ...outs]) if (t) host.disposeData(t.dataId, true);
      return Array.isArray(result) ? back : back[0]!;
    },
  };
}

let patched: string[] | undefined;

/** Registers the patches once; returns the kernel names meshtrain supplies on wasm. */
export function patchWasmKernels(): string[] {
  if (patched) return patched;
  const have = new Set(tf.getKernelsForBackend(WASM).map((k) => k.kernelName));
  const ours = [
    untransposed("BatchMatMul"),
    untransposed("_FusedMatMul"),
    conv2dBackpropFilter,
    conv2dBackpropInput(),
    maxPoolGrad,
  ];
  for (const k of ours) {
    if (have.has(k.kernelName)) tf.unregisterKernel(k.kernelName, WASM);
    tf.registerKernel(k);
  }
  const bridged: string[] = [];
  for (const k of tf.getKernelsForBackend("cpu")) {
    if (!have.has(k.kernelName) && !ours.some((o) => o.kernelName === k.kernelName)) {
      tf.registerKernel(viaCpu(k));
      bridged.push(k.kernelName);
    }
  }
  patched = [...ours.map((k) => k.kernelName), ...bridged].sort();
  return patched;
}
