/**
 * Lists the WebGPU adapters Dawn finds in this process, as one JSON line on stdout: the driver
 * (and `meshtrain devices`) starts it with the environment a worker would get (one Vulkan
 * driver's manifest, the loader's folder), so what it lists is what such a worker can use. In a
 * process of its own because the Vulkan loader's library path is fixed when a process starts.
 */
import { enumerateAdapters, loadDawn } from "./dawn";
import { vulkanProblem } from "./vulkan";

async function main(): Promise<void> {
  const dawn = loadDawn();
  const problem = dawn.ok ? vulkanProblem() : dawn.reason;
  if (!dawn.ok || problem) {
    process.stdout.write(`${JSON.stringify({ adapters: [], problem })}\n`);
    return;
  }
  process.stdout.write(`${JSON.stringify({ adapters: await enumerateAdapters(dawn.pkg), problem: null })}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stdout.write(
      `${JSON.stringify({ adapters: [], problem: `the adapter probe failed: ${err instanceof Error ? err.message : String(err)}` })}\n`,
    );
    process.exit(0);
  },
);
