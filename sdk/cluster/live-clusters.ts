import { ConfigError } from "../errors/errors";

/**
 * The live clusters of this process: so that re-running a notebook cell that launches one says
 * what is still running, closeAll() closes every one, and an interrupt (Ctrl-C, a notebook's
 * interrupt button, both a SIGINT to the whole process group) stops their fits at the next
 * step boundary instead of killing their workers.
 */
export interface LiveCluster {
  /** One line for people: size, strategy, age, state. */
  describe(): string;
  /** Asks a running fit to stop at its next step boundary; false when no fit runs. */
  interrupt(reason: string): boolean;
  close(): Promise<void>;
  /** A launch still waiting for its workers: an interrupt cancels it rather than a fit. */
  launching?: boolean;
}

/** Where a cluster came from: what decides whether launching again replaces it. */
export interface LaunchOrigin {
  /** The notebook cell that launched it (see cell-origin.ts); undefined in a script or with keep. */
  cell?: string;
  /** A name the user chose: such a cluster is never replaced, and no other live cluster takes its name. */
  name?: string;
}

const live = new Map<LiveCluster, LaunchOrigin>();
/** A second interrupt within this long closes every cluster at once. */
const SECOND_INTERRUPT_MS = 2000;
let lastInterrupt = -Infinity;
let listening = false;

/**
 * Inside a tslab kernel an interrupt must never end the process (the kernel dies with it) and
 * its listener is better left in place (removing it from a cell is undone, see DESIGN.md).
 */
function inKernel(): boolean {
  // tslab started directly (bin/tslab kernel) or through meshtrain's launcher (kernel-main.js):
  // either way its executor is loaded in this process.
  const tslabLoaded = Object.keys(require.cache).some((f) => /tslab[\\/]dist[\\/]executor\.js$/.test(f));
  return tslabLoaded || (process.argv.includes("kernel") && process.argv.some((a) => /tslab/.test(a)));
}

function describe(c: LiveCluster, origin: LaunchOrigin | undefined): string {
  return `${origin?.name !== undefined ? `"${origin.name}": ` : ""}${c.describe()}`;
}

/**
 * Before a launch: a cluster the same notebook cell launched earlier is closed (re-running a
 * cell replaces what it made, as a Python user expects), unless it was kept or named; a name
 * still in use is refused. Null when there is nothing to close: the launch goes on in the same
 * tick (a join listener opens as soon as launch() is called).
 */
export function replaceEarlier(origin: LaunchOrigin): Promise<void> | null {
  if (origin.name !== undefined) {
    const holder = [...live].find(([, o]) => o.name === origin.name);
    if (holder) {
      throw new ConfigError(`a cluster named "${origin.name}" is still running (${holder[0].describe()})`, {
        hint: `close it first (liveClusters() lists the live clusters; closeAll() closes every one), or choose another name`,
      });
    }
    return null;
  }
  if (origin.cell === undefined) return null;
  const earlier = [...live]
    .filter(([c, o]) => !c.launching && o.cell === origin.cell && o.name === undefined)
    .map(([c]) => c);
  if (earlier.length === 0) return null;
  process.stderr.write(
    `meshtrain: this cell ran before and launched ${earlier.map((c) => c.describe()).join("; ")}: closing ${earlier.length === 1 ? "it" : "them"} first (launch({ keep: true }) or launch({ name }) keeps a cluster when its cell runs again)\n`,
  );
  return Promise.all(earlier.map((c) => c.close())).then(() => undefined);
}

export function register(c: LiveCluster, origin: LaunchOrigin = {}): void {
  // A waiting launch says nothing: the cluster it becomes registers (and says) next.
  const earlier = [...live].filter(([l]) => !l.launching);
  if (earlier.length > 0 && !c.launching) {
    const lines = earlier.map(([l, o], i) => `  ${i + 1}. ${describe(l, o)}`);
    process.stderr.write(
      `meshtrain: this process still runs ${earlier.length} cluster(s) launched earlier:\n${lines.join("\n")}\n  close them with their close(), or all at once with closeAll() (import { closeAll } from "meshtrain"); liveClusters() returns them\n`,
    );
  }
  live.set(c, origin);
  if (!listening) {
    listening = true;
    process.on("SIGINT", onInterrupt);
  }
}

export function unregister(c: LiveCluster): void {
  live.delete(c);
  // In a script, Ctrl-C with no cluster left ends the process as Node's default does.
  if (live.size === 0 && listening && !inKernel()) {
    listening = false;
    process.off("SIGINT", onInterrupt);
  }
}

/** The registered clusters, oldest first (launches still waiting for workers included). */
export function registered(): LiveCluster[] {
  return [...live.keys()];
}

/** Closes every cluster this process launched and has not closed (their local workers exit). */
export async function closeAll(): Promise<void> {
  await Promise.all([...live.keys()].map((c) => c.close()));
}

function onInterrupt(): void {
  const now = performance.now();
  const again = now - lastInterrupt < SECOND_INTERRUPT_MS;
  lastInterrupt = now;
  const kernel = inKernel();
  if (!again) {
    const stopping = [...live.keys()].filter((c) =>
      c.interrupt("fit interrupted (SIGINT: Ctrl-C or the notebook's interrupt)"),
    );
    if (stopping.length > 0) {
      const fits = stopping.filter((c) => !c.launching).length;
      const parts = [
        ...(fits > 0 ? [`stopping ${fits === 1 ? "the fit" : `${fits} fits`} after the step in flight`] : []),
        ...(fits < stopping.length ? ["cancelling the launch waiting for workers"] : []),
      ];
      process.stderr.write(
        `meshtrain: interrupted: ${parts.join("; ")}; interrupt again within 2 s to close the cluster at once\n`,
      );
      return;
    }
    if (kernel) return;
  }
  process.stderr.write(`meshtrain: ${again ? "interrupted again" : "interrupted"}: closing ${live.size} cluster(s)\n`);
  const closing = closeAll();
  if (!kernel) void closing.finally(() => process.exit(130));
}
