import { AuthError, LaunchError, TimeoutError, type MeshtrainError } from "../errors/errors";
import type { JoinHello } from "../protocol/join";
import { toWireError } from "../protocol/wire-error";
import { acceptHandshake } from "../transport/handshake";
import { readJoinFrame, sendJoinFrame } from "../transport/join-frames";
import { CLOSE, type Link } from "../transport/link";
import { listen, type Listener } from "../transport/ws-endpoint";
import { VERSION } from "../protocol/sdk-version";
import { relayPath } from "../protocol/relay";
import { TabRelay } from "./tab-relay";
import { serveWorkerPage, workerPageBuilt } from "./worker-page";

/**
 * The driver's side of workers that join (`meshtrain worker --join <url>`): listens, proves the
 * token both ways, and gives ranks: a worker whose environment names its rank (Slurm, torchrun,
 * TF_CONFIG...) gets that one, the others the free ranks in order of arrival. Each joined
 * worker's connection stays open as its lifeline: closing the listener ends them all.
 */

export interface JoinedWorker {
  rank: number;
  /** Where the worker listens; the driver connects there as to any worker. */
  url: string;
  hello: JoinHello;
}

interface Arrival {
  hello: JoinHello;
  link: Link;
  from: string;
}

export interface JoinListenerOptions {
  host: string;
  port: number;
  token: string;
  /** Workers the cluster starts with. */
  expected: number;
  handshakeTimeoutMs: number;
  /** Browser tabs may join: the port also serves the worker page and relays the tabs' connections. */
  browsers?: { maxFrameBytes: number };
}

/** "rank 2 (host a, 10.0.0.3:51234)" and the like, for errors. */
function who(a: Arrival): string {
  return `${a.hello.claim ? `rank ${a.hello.claim.rank} ` : ""}(${a.hello.hostname}, pid ${a.hello.pid}, from ${a.from})`;
}

export class JoinListener {
  private listener: Listener | undefined;
  private readonly arrivals: Arrival[] = [];
  private readonly lifelines = new Set<Link>();
  private failure: MeshtrainError | null = null;
  private wake: (() => void) | null = null;
  /** Set once the first group has its ranks: later arrivals wait for add(). */
  private assigned = false;
  /** What started the workers (ssh, Slurm, fromEnv's own worker): stopped with the listener. */
  private launcher: { stop(): Promise<void> } | undefined;

  /** While an elastic fit runs on a cluster that takes tabs: a tab (or worker) that joins is added at once. */
  private admitting: (() => void) | null = null;
  /** add() calls made for arrivals and not yet settled. */
  private adding = 0;
  /** Browser tabs' connections, where tabs may join. */
  private readonly relay: TabRelay | undefined;

  private constructor(private readonly o: JoinListenerOptions) {
    if (o.browsers)
      this.relay = new TabRelay({
        token: o.token,
        handshakeTimeoutMs: o.handshakeTimeoutMs,
        baseUrl: () => this.url,
        refused: (what) => process.stderr.write(`meshtrain: ${what}\n`),
      });
  }

  static async open(o: JoinListenerOptions): Promise<JoinListener> {
    if (o.browsers && !workerPageBuilt())
      throw new LaunchError("join({ browsers: true }): the worker page was not built", {
        hint: process.env.MESHTRAIN_WORKER_PAGE
          ? `MESHTRAIN_WORKER_PAGE=${process.env.MESHTRAIN_WORKER_PAGE} holds no page.js and comm.js: build them there with node scripts/build-browser.js --out <dir>`
          : "run npm run build (it bundles the page)",
      });
    const j = new JoinListener(o);
    j.listener = await listen({
      host: o.host,
      port: o.port,
      // Relayed connections carry tensors: the workers' frame limit, not the join's.
      maxFrameBytes: o.browsers ? o.browsers.maxFrameBytes : 64 * 1024,
      maxConnections: 4096,
      keepProcessAlive: false,
      ...(o.browsers ? { relayPings: true, onRequest: serveWorkerPage } : {}),
      onLink: (link, path) => j.route(link, path),
    });
    return j;
  }

  get url(): string {
    return this.listener!.url;
  }

  /** The link a browser opens to join as a worker: the page's address, the token in its fragment (never sent to the server). */
  get inviteUrl(): string | undefined {
    return this.relay ? `${this.url.replace(/^ws/, "http")}/#token=${encodeURIComponent(this.o.token)}` : undefined;
  }

  private route(link: Link, path: string): void {
    if (path === "/") return this.accept(link);
    const r = this.relay ? relayPath(path) : null;
    if (!r) return link.close(CLOSE.policy, `nothing listens at ${path.slice(0, 64)}`);
    if (r.kind === "register") this.relay!.register(link);
    else if (r.kind === "reach") this.relay!.reach(link, r.id);
    else this.relay!.take(link, r.id, r.conn);
  }

  private accept(link: Link): void {
    this.lifelines.add(link);
    const from = link.address;
    acceptHandshake(link, {
      token: this.o.token,
      timeoutMs: this.o.handshakeTimeoutMs,
      server: { version: VERSION, pid: process.pid },
    })
      .then(async (auth) => {
        if (auth.role !== "joining")
          throw new LaunchError(`${from} connected to the join address as a ${auth.role}`, {
            hint: "the join address is for `meshtrain worker --join`; connect() takes workers' own addresses",
          });
        const msg = await readJoinFrame(link, {
          timeoutMs: this.o.handshakeTimeoutMs,
          who: `the worker at ${from}`,
          waitingFor: "hello",
        });
        if (msg.type !== "hello")
          throw new LaunchError(`the worker at ${from} sent "${msg.type}" where its hello belongs`);
        this.arrived({ hello: msg, link, from });
      })
      .catch((err: MeshtrainError) => {
        this.lifelines.delete(link);
        if (link.closed === false) link.close(CLOSE.protocolError, "join refused");
        // A wrong token is a worker started with another secret: say so at once. Anything else
        // that fails before a hello (a scanner, a stray client) is not a worker.
        if (err instanceof AuthError)
          this.fail(
            new AuthError(`a worker at ${from} tried to join with another token`, {
              details: { address: from },
              hint: "start every worker with the driver's token (MESHTRAIN_TOKEN or --token-file)",
            }),
          );
      });
  }

  private arrived(a: Arrival): void {
    if (this.failure) return void this.refuse(a, this.failure);
    a.link.setHandlers({
      text: () => undefined,
      binary: () => undefined,
      pong: () => undefined,
      close: () => this.left(a),
    });
    if (a.hello.version !== VERSION) {
      return this.fail(
        new LaunchError(`worker ${who(a)} runs meshtrain ${a.hello.version}; this driver runs ${VERSION}`, {
          hint: `install meshtrain ${VERSION} on ${a.hello.hostname} (or the driver's version everywhere)`,
        }),
        a,
      );
    }
    const claim = a.hello.claim;
    if (!this.assigned && claim) {
      const n = this.o.expected;
      if (claim.rank >= n)
        return this.fail(
          new LaunchError(
            `worker ${who(a)} claims rank ${claim.rank} (${claim.source}), but the cluster waits for ranks 0 to ${n - 1}`,
            {
              hint: `join({ workers: ${claim.worldSize ?? claim.rank + 1} }), or start that worker with a rank below ${n}`,
            },
          ),
          a,
        );
      if (claim.worldSize !== undefined && claim.worldSize !== n)
        return this.fail(
          new LaunchError(
            `worker ${who(a)} was started as one of ${claim.worldSize} (${claim.source}), but the cluster waits for ${n}`,
            { hint: `join({ workers: ${claim.worldSize} }), or start ${n} workers` },
          ),
          a,
        );
      const twin = this.arrivals.find((b) => b.hello.claim?.rank === claim.rank);
      if (twin)
        return this.fail(
          new LaunchError(`two workers claim rank ${claim.rank}: ${who(twin)} and ${who(a)}`, {
            hint: `each worker needs its own rank (${claim.source}); check how they were started`,
          }),
          a,
        );
    }
    this.arrivals.push(a);
    this.wake?.();
    this.admitting?.();
  }

  /**
   * A tab that opens the invite link during an elastic fit joins it (add()), at the next step
   * boundary as any added worker; once `active` turns false, arrivals wait for add() again.
   */
  admitTabs(active: () => boolean, add: () => Promise<number>): void {
    if (!this.relay) return;
    const admit = (): void => {
      if (!active()) {
        this.admitting = null;
        return;
      }
      // Each add() takes one arrival; those already asked for are not asked for twice.
      for (let k = this.arrivals.length - this.adding; k > 0; k--) {
        this.adding++;
        add()
          .catch((err: unknown) =>
            process.stderr.write(
              `meshtrain: a tab that joined during the fit was not added: ${(err as Error).message}\n`,
            ),
          )
          .finally(() => this.adding--);
      }
    };
    this.admitting = admit;
    admit();
  }

  /** A worker that leaves before it has a rank is no longer waited for. */
  private left(a: Arrival): void {
    this.lifelines.delete(a.link);
    const i = this.arrivals.indexOf(a);
    if (i >= 0) this.arrivals.splice(i, 1);
  }

  /** Waits for the expected workers; resolves with them in rank order. */
  async waitForAll(timeoutMs: number): Promise<JoinedWorker[]> {
    const n = this.o.expected;
    await this.until(
      () => this.arrivals.length >= n,
      timeoutMs,
      () => this.missing(timeoutMs),
    );
    const group = this.arrivals.splice(0, n);
    const ranks = new Map<number, Arrival>();
    for (const a of group) if (a.hello.claim) ranks.set(a.hello.claim.rank, a);
    let free = 0;
    for (const a of group.filter((x) => !x.hello.claim)) {
      while (ranks.has(free)) free++;
      ranks.set(free, a);
    }
    this.assigned = true;
    return [...ranks.entries()].sort((x, y) => x[0] - y[0]).map(([rank, a]) => this.give(a, rank, n));
  }

  /** The next worker that joins after the first group (cluster.add()), given `rank`. */
  async next(rank: number, timeoutMs: number): Promise<JoinedWorker> {
    await this.until(
      () => this.arrivals.length > 0,
      timeoutMs,
      () =>
        new TimeoutError(`no worker joined ${this.url} within ${timeoutMs} ms for add()`, {
          details: { waitingFor: `a worker joining ${this.url}` },
          hint: `start one with: meshtrain worker --join ${this.url}`,
        }),
    );
    return this.give(this.arrivals.shift()!, rank, rank + 1);
  }

  private give(a: Arrival, rank: number, worldSize: number): JoinedWorker {
    sendJoinFrame(a.link, { type: "assigned", rank, worldSize });
    return { rank, url: a.hello.url, hello: a.hello };
  }

  private missing(timeoutMs: number): MeshtrainError {
    const n = this.o.expected;
    const claimed = new Set(this.arrivals.flatMap((a) => (a.hello.claim ? [a.hello.claim.rank] : [])));
    const unclaimed = this.arrivals.length - claimed.size;
    const open = [...Array(n).keys()].filter((r) => !claimed.has(r));
    const joined = this.arrivals.map(who).join(", ") || "none";
    return new TimeoutError(
      `${this.arrivals.length} of ${n} workers joined ${this.url} within ${timeoutMs} ms; joined: ${joined}; missing: ${n - this.arrivals.length} worker(s)${unclaimed === 0 ? `, ranks ${open.join(", ")}` : ` among ranks ${open.join(", ")}`}`,
      {
        details: { waitingFor: `${n - this.arrivals.length} more worker(s) joining ${this.url}` },
        hint: `start the missing ones with: meshtrain worker --join ${this.url} (MESHTRAIN_TOKEN set), or raise timeoutMs`,
      },
    );
  }

  private async until(done: () => boolean, timeoutMs: number, late: () => MeshtrainError): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (this.failure) throw this.failure;
      const left = deadline - Date.now();
      if (left <= 0) throw late();
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
    if (this.failure) throw this.failure;
  }

  private refuse(a: Arrival, err: MeshtrainError): void {
    sendJoinFrame(a.link, { type: "error", error: toWireError(err) });
    a.link.close(CLOSE.normal, "join refused");
  }

  /** The launcher that starts this cluster's workers; close() stops it after ending the lifelines. */
  attach(launcher: { stop(): Promise<void> }): void {
    this.launcher = launcher;
  }

  /** A launcher's news that the workers will not all come (a job cancelled, an ssh that failed): the wait fails with it now. */
  abort(err: MeshtrainError): void {
    this.fail(err);
  }

  /** Fails the join: every waiting worker is told why and let go. */
  private fail(err: MeshtrainError, cause?: Arrival): void {
    if (cause) this.refuse(cause, err);
    if (this.failure) return;
    this.failure = err;
    for (const a of this.arrivals.splice(0)) this.refuse(a, err);
    this.wake?.();
  }

  /** Stops listening and ends every lifeline: joined workers exit. */
  async close(): Promise<void> {
    for (const link of this.lifelines) link.close(CLOSE.normal, "the driver closed the cluster");
    this.lifelines.clear();
    this.relay?.close();
    await this.listener?.close();
    await this.launcher?.stop();
  }
}
