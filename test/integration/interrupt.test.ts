import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";

/**
 * Ctrl-C in a terminal sends SIGINT to the script's whole process group, local workers included.
 * The workers ignore it; the driver stops the fit after the step in flight (AbortError), the
 * script goes on and trains again on the same cluster. A second Ctrl-C within 2 s closes the
 * cluster at once and ends the script with 130. Either way no worker process is left.
 */

const SCRIPT = path.join(__dirname, "..", "helpers", "interrupt-script.js");

interface Ran {
  code: number | null;
  out: string;
  pids: number[];
}

/** Runs the script in its own process group; at `step N` sends SIGINT to the group `times` times. */
function runInterrupted(atStep: number | "idle", times: number): Promise<Ran> {
  const child = spawn(process.execPath, [SCRIPT, ...(atStep === "idle" ? ["idle"] : [])], { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let sent = false;
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    if (!sent && out.includes(`step ${atStep}\n`)) {
      sent = true;
      process.kill(-child.pid!, "SIGINT");
      if (times > 1) setTimeout(() => process.kill(-child.pid!, "SIGINT"), 300);
    }
  });
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.on("exit", (code) => {
      clearTimeout(timer);
      const pids = (/pids ([\d ]+)/.exec(out)?.[1] ?? "").trim().split(" ").map(Number);
      resolve({ code, out, pids });
    }),
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function noneAlive(pids: number[]): Promise<boolean> {
  for (let i = 0; i < 50 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
  return !pids.some(alive);
}

test("one Ctrl-C stops the fit after the step in flight; the workers survive it and train the next fit", async () => {
  const r = await runInterrupted(3, 1);
  assert.equal(r.code, 0, r.out);
  const aborted = Number(/aborted after (\d+) steps/.exec(r.out)?.[1]);
  const seen = Number(/interrupt seen after step (\d+)/.exec(r.out)?.[1]);
  assert.ok(Number.isInteger(aborted) && Number.isInteger(seen), r.out);
  // Steps 0..seen were recorded when the interrupt arrived; at most the two in flight follow.
  assert.ok(aborted >= seen + 1 && aborted <= seen + 3, `interrupt after step ${seen}, ${aborted} steps recorded`);
  assert.match(r.out, /stopping the fit after the step in flight/);
  assert.match(r.out, /second fit 4 steps/);
  assert.match(r.out, /closed/);
  assert.equal(r.pids.length, 2);
  assert.ok(await noneAlive(r.pids), "no worker process is left");
});

test("a second Ctrl-C within 2 s closes the cluster at once and ends the script with 130; no worker is left", async () => {
  const r = await runInterrupted(3, 2);
  assert.equal(r.code, 130, r.out);
  assert.match(r.out, /interrupted again: closing 1 cluster/);
  assert.doesNotMatch(r.out, /second fit/);
  assert.ok(await noneAlive(r.pids), "no worker process is left");
});

test("one Ctrl-C with no fit running closes the cluster and ends the script with 130, as Node's default would; no worker is left", async () => {
  const r = await runInterrupted("idle", 1);
  assert.equal(r.code, 130, r.out);
  assert.match(r.out, /meshtrain: interrupted: closing 1 cluster/);
  assert.doesNotMatch(r.out, /still running/);
  assert.equal(r.pids.length, 2);
  assert.ok(await noneAlive(r.pids), "no worker process is left");
});
