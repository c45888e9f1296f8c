#!/usr/bin/env node
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

runProgram(program, "meshtrain-worker");
