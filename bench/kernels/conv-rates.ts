import { loadAddon } from "../../sdk/backends/native/addon";

/**
 * One convolution's three passes (forward, the input's gradient, the filter's) on the native
 * addon, in GFLOP/s, one thread: how `native/src/conv_direct.c` decides where its direct kernels
 * beat im2col + OpenBLAS. The addon is loaded as a worker loads it (OPENBLAS_CORETYPE chosen
 * from the CPU unless the environment set it). Prints; writes no results file: a tool for
 * choosing a rule, not a benchmark against a peer.
 *
 * usage: node dist/bench/kernels/conv-rates.js N,H,W,C,OC,K,stride [...]   (same padding)
 */
function rates(spec: string): void {
  const load = loadAddon();
  if (!load.ok) throw new Error(`the native addon did not load: ${load.reason}`);
  const m = load.addon;
  const [N, H, W, C, OC, K, S] = spec.split(",").map(Number) as [number, number, number, number, number, number, number];
  const pad = (K - 1) >> 1;
  const OH = Math.ceil(H / S);
  const OW = Math.ceil(W / S);
  const p = Int32Array.from([N, H, W, C, OH, OW, OC, K, K, S, S, 1, 1, pad, pad]);
  const random = (n: number): Float32Array => Float32Array.from({ length: n }, () => Math.random() - 0.5);
  const x = random(N * H * W * C);
  const f = random(K * K * C * OC);
  const y = new Float32Array(N * OH * OW * OC);
  const dy = random(y.length);
  const dx = new Float32Array(x.length);
  const df = new Float32Array(f.length);
  const scratch = new Float32Array(Math.max(OH * OW * K * K * C * 8, K * K * C * OC));
  const flops = 2 * N * OH * OW * K * K * C * OC;
  const time = (name: string, run: () => void): void => {
    run();
    const ms: number[] = [];
    for (let j = 0; j < 5; j++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 5; i++) run();
      ms.push(Number(process.hrtime.bigint() - t0) / 5e6);
    }
    const median = ms.sort((a, b) => a - b)[2]!;
    process.stdout.write(`${spec} ${name.padEnd(6)} ${median.toFixed(2)} ms ${(flops / median / 1e6).toFixed(1)} GFLOP/s\n`);
  };
  time("fwd", () => m.conv2d(x, f, y, p, scratch));
  time("input", () => m.conv2dBackpropInput(dy, f, dx, p, scratch));
  time("filter", () => m.conv2dBackpropFilter(x, dy, df, p, scratch));
}

const specs = process.argv.slice(2);
if (specs.length === 0) {
  process.stderr.write("usage: node dist/bench/kernels/conv-rates.js N,H,W,C,OC,K,stride [...]\n");
  process.exit(2);
}
for (const s of specs) rates(s);
