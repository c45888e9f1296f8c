import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError } from "../../sdk/index";
import { resolveFitOptions } from "../../sdk/driver/fit-options";
import { closestKey } from "../../sdk/config/unknown-keys";
import { smallClassifier } from "../helpers/models";
import { typeErrors } from "../helpers/type-errors";

/** A mistyped option, as a user passes it through `any` or plain JavaScript: named, with the nearest valid key and the list. */
function refused(run: () => unknown, message: RegExp): void {
  assert.throws(run, (e: unknown) => e instanceof ConfigError && message.test(e.message), String(message));
}

test("a mistyped strategy option names the key, the strategy, the nearest valid key and every valid one", () => {
  refused(
    () => cluster().workers(2).strategy("data", { compresion: "fp16" } as never),
    /strategy\("data"\) options: "compresion" is not an option \(did you mean "compression"\?\); the options are feed, .*compression/,
  );
  refused(() => cluster().workers(2).strategy("pipeline", { microbatches: 4 } as never), /"microbatches" is not an option \(did you mean "microBatches"\?\)/);
  // Nested: the place is named too.
  refused(() => cluster().workers(2).strategy("data", { sync: { evry: 4 } } as never), /sync: "evry" is not an option \(did you mean "every"\?\); the options are every, outer/);
});

test("a mistyped fit option is named with the nearest valid one; a key like none has no guess", () => {
  const model = smallClassifier();
  refused(() => resolveFitOptions({ epoch: 3 } as never, model), /"epoch" is not an option \(did you mean "epochs"\?\)/);
  refused(() => resolveFitOptions({ zzzzzzzz: 1 } as never, model), /"zzzzzzzz" is not an option; the options are /);
});

test("closestKey takes a typo, not any word", () => {
  assert.equal(closestKey("compresion", ["compression", "feed"]), "compression");
  assert.equal(closestKey("batchsize", ["batchSize", "epochs"]), "batchSize");
  assert.equal(closestKey("learning", ["batchSize", "epochs"]), null);
});

test("a mistyped option in TypeScript names the strategy's options type and the nearest key, and no zod internals", () => {
  // The built declarations, as a notebook cell or a user's project compiles against them.
  const sdk = path.join(__dirname, "..", "..", "sdk", "index");
  const errors = typeErrors(path.join(__dirname, "options.check.ts"), [
    `import { cluster } from ${JSON.stringify(sdk)};`,
    'cluster().workers(2).strategy("data", { compresion: "fp16" });',
    'cluster().workers(2).strategy("pipeline", { microbatchs: 4 });',
    'cluster().workers(2).strategy("ps", { mode: "eventually" });',
    'cluster().workers(2).strategy("hybrid", { stages: 2, replica: 2 });',
  ].join("\n"));
  const at = (line: number): string => errors.filter((e) => e.startsWith(`${line}: `)).join("\n");
  assert.match(at(2), /'compresion' does not exist in type 'DataStrategyOptions'\. Did you mean to write 'compression'\?/);
  assert.match(at(3), /'microbatchs' does not exist in type 'PipelineStrategyOptions'\. Did you mean to write 'microBatches'\?/);
  assert.match(at(4), /Type '"eventually"' is not assignable to type '("sync" \| "async"|"async" \| "sync") \| undefined'/);
  assert.match(at(5), /'replica' does not exist in type 'HybridStrategyOptions'\. Did you mean to write 'replicas'\?/);
  assert.equal(errors.length, 4, errors.join("\n"));
  assert.doesNotMatch(errors.join("\n"), /\$Infer|Zod|z\.input/, "zod's own types in an error");
});

test("many unknown keys (an object that is not options) are counted past five, and the options listed once", () => {
  const model = smallClassifier();
  const wrong = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]));
  assert.throws(
    () => resolveFitOptions(wrong as never, model),
    (e: unknown) => {
      const m = (e as Error).message;
      assert.match(m, /"k0", "k1", "k2", "k3", "k4" and 35 more keys are not options; the options are epochs, /);
      assert.equal(m.split("the options are").length, 2, m);
      return e instanceof ConfigError;
    },
  );
});

test("a tensor where options go is named as a tensor in one sentence, not property by property", () => {
  const t = tf.zeros([4, 3]);
  refused(() => cluster().workers(2).plan(smallClassifier(), t as never), /^invalid plan options: a tf\.Tensor of shape \[4,3\] \(float32\), not an object of options\n/);
  t.dispose();
});
