import * as path from "node:path";
import { ConfigError } from "../errors/errors";

const loaded: string[] = [];

/**
 * Imports the files the worker was started with (--module), before it serves any driver: the
 * user's own modules, e.g. ones registering custom layers. This is the only code a worker runs
 * besides its own, and it comes from its own disk, never from the wire.
 */
export function loadModules(files: readonly string[]): void {
  for (const f of files) {
    const abs = path.resolve(f);
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require(abs);
    } catch (err) {
      throw new ConfigError(`--module ${abs} could not be loaded: ${(err as Error).message.split("\n")[0]}`, {
        hint: "give a JavaScript file (built, not .ts) that exists on this machine and imports the same @tensorflow/tfjs as meshtrain",
        cause: err,
      });
    }
    loaded.push(abs);
  }
}

/** The modules this worker loaded, for messages about classes it does not know. */
export function loadedModules(): readonly string[] {
  return loaded;
}

/** What to do about a class the model names that this worker does not know. */
export function unknownClassHint(className: string): string {
  const modules = loadedModules();
  return `"${className}" is not a TF.js built-in and ${modules.length ? `none of this worker's modules (${modules.join(", ")}) registers it` : "this worker loaded no module that registers it"}: put the class and its tf.serialization.registerClass call in a file and pass .modules(["./that-file.js"]) to the cluster builder (workers started elsewhere: meshtrain worker --module that-file.js). Workers never run code sent to them.`;
}
