import assert from "node:assert/strict";
import { test } from "node:test";
import { blasCoreFor, blasCoreNote, chooseBlasCore } from "../../sdk/backends/native/blas-core";

const cpu = (...flags: string[][]): string => flags.map((f, i) => `processor\t: ${i}\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse sse2 ${f.join(" ")}\n`).join("\n");

test("OpenBLAS is asked for the fastest core type whose instructions every core has", () => {
  assert.equal(blasCoreFor(cpu(["avx", "avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"])), "SkylakeX");
  assert.equal(blasCoreFor(cpu(["avx", "avx2", "fma", "avx512f"])), "Haswell", "AVX-512 without BW/DQ/VL is not enough for SkylakeX's kernels");
  assert.equal(blasCoreFor(cpu(["avx", "avx2", "fma"], ["avx"])), "Sandybridge", "a core without AVX2 decides");
  assert.equal(blasCoreFor(cpu(["sse3"])), null, "older CPUs keep OpenBLAS's own choice");
  assert.equal(blasCoreFor("Processor\t: AArch64\n"), null, "no x86 flags line");
});

test("a core type the user chose is kept", () => {
  const env: NodeJS.ProcessEnv = { OPENBLAS_CORETYPE: "Haswell" };
  assert.equal(chooseBlasCore(env), null);
  assert.equal(env.OPENBLAS_CORETYPE, "Haswell");
});

test("a worker is told when the environment's core type is older than its CPU's", () => {
  const avx512 = cpu(["avx", "avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"]);
  const note = blasCoreNote({ OPENBLAS_CORETYPE: "Haswell" }, avx512);
  assert.match(note ?? "", /OPENBLAS_CORETYPE=Haswell is set .* SkylakeX's instructions/);
  assert.equal(blasCoreNote({ OPENBLAS_CORETYPE: "SkylakeX" }, avx512), null, "the best core type");
  assert.equal(blasCoreNote({ OPENBLAS_CORETYPE: "Haswell" }, cpu(["avx", "avx2", "fma"])), null, "Haswell is this CPU's best");
  assert.equal(blasCoreNote({}, avx512), null, "meshtrain chooses when nothing is set");
  assert.equal(blasCoreNote({ OPENBLAS_CORETYPE: "Zen" }, avx512), null, "a core type outside the list is the user's business");
});
