#!/usr/bin/env node
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError } from "../errors/errors";
import { runProgram } from "./run-program";
import { Command } from "commander";
import { quietCpuBanner } from "../backends/quiet-banner";
import { VERSION } from "../protocol/sdk-version";
import { hostCommands, workerCommand } from "./worker-command";

/**
 * The worker bundle's program (`node meshtrain-worker.js`, made by `meshtrain bundle`): the
 * worker side alone, for hosts with Node and nothing else. Its flags are `meshtrain worker`'s.
 */
quietCpuBanner();

const program = workerCommand(
  new Command().name("meshtrain-worker").version(VERSION).enablePositionalOptions(),
).description(`meshtrain ${VERSION}'s worker, from a bundle: serve drivers that know the token`);

// `worker` too, so that a launcher's command lines (`CMD preflight ...`, `CMD worker --join ...`) run on either program.
workerCommand(program.command("worker"));
hostCommands(program);

program
  .command("bench")
  .description(
    "bench:gpu from the bundle alone: the MLP and the CNN on every backend here (native, wasm, each WebGPU adapter), one worker and two, samples/s and each step's readback and upload; results in ./meshtrain-bench-results",
  )
  .option("--quick", "a smoke run: one CPU row and the WebGPU rows, few steps", false)
  .action(async (o: { quick: boolean }) => {
    // The bench in the bundle's own bench/ folder (scripts/build-worker-bundle.js), in a process of its own as `npm run bench:gpu` runs it.
    const script = path.join(__dirname, "bench", "gpu", "run.js");
    if (!fs.existsSync(script)) {
      throw new ConfigError(
        "this bundle was made without bench:gpu (meshtrain bundle --no-bench, or shipped by a launcher)",
        {
          hint: "make a bundle with it where meshtrain is installed: npx meshtrain bundle, then copy it here",
        },
      );
    }
    const child = spawn(process.execPath, [script, ...(o.quick ? ["--quick"] : [])], { stdio: "inherit" });
    const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? 1)));
    process.exitCode = code;
  });

runProgram(program, "meshtrain-worker");
