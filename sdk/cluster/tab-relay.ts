import { randomBytes } from "node:crypto";
import type { MeshtrainError } from "../errors/errors";
import { toWireJson } from "../protocol/json";
import { PROTOCOL_VERSION } from "../protocol/version";
import { acceptHandshake } from "../transport/handshake";
import { CLOSE, type Link } from "../transport/link";
import { relayLinks } from "../transport/ws-endpoint";
import { VERSION } from "../protocol/sdk-version";

/** Connections dialled to one tab that it has not taken yet; more are refused (a tab takes each within its handshake time). */
const MAX_PENDING = 16;

interface Tab {
  link: Link;
  pending: Map<string, { link: Link; timer: NodeJS.Timeout }>;
}

const newId = (): string => randomBytes(16).toString("base64url");

/**
 * The driver's relay for browser tabs (protocol/relay.ts): a tab registers after proving the
 * token, gets an address under /relay/<id>, and each connection dialled there is joined frame
 * for frame to one the tab dials back for it. The two ends authenticate each other through the
 * relay; the relay only forwards. A tab's address is as secret as its id (128 random bits),
 * which only authenticated members learn.
 */
export class TabRelay {
  private readonly tabs = new Map<string, Tab>();

  constructor(
    private readonly o: { token: string; handshakeTimeoutMs: number; baseUrl(): string; refused(what: string): void },
  ) {}

  /** /relay: a tab proves the token and is told its address. */
  register(link: Link): void {
    acceptHandshake(link, {
      token: this.o.token,
      timeoutMs: this.o.handshakeTimeoutMs,
      server: { version: VERSION, pid: process.pid },
    }).then(
      (auth) => {
        if (auth.role !== "relay") {
          link.close(CLOSE.protocolError, "the relay registers browser tabs only");
          return;
        }
        const id = newId();
        const tab: Tab = { link, pending: new Map() };
        this.tabs.set(id, tab);
        link.setHandlers({
          text: () => link.close(CLOSE.protocolError, "a tab sends nothing on its relay registration"),
          binary: () => link.close(CLOSE.protocolError, "a tab sends nothing on its relay registration"),
          pong: () => undefined,
          close: () => this.drop(id),
        });
        link.sendText(
          toWireJson({ type: "listening", v: PROTOCOL_VERSION, url: `${this.o.baseUrl()}/relay/${id}`, id }),
        );
      },
      (err: MeshtrainError) => this.o.refused(`a browser tab at ${link.address} was refused: ${err.summary}`),
    );
  }

  /** /relay/<id>: someone (the driver, a worker, a tab) reaches tab `id`; held until the tab takes it. */
  reach(link: Link, id: string): void {
    const tab = this.tabs.get(id);
    if (!tab) return link.close(CLOSE.policy, "no browser tab at this address (it left, or the address is stale)");
    if (tab.pending.size >= MAX_PENDING) return link.close(CLOSE.busy, "too many connections waiting for this tab");
    const conn = newId();
    const timer = setTimeout(() => {
      tab.pending.delete(conn);
      link.close(
        CLOSE.handshakeTimeout,
        `the browser tab did not take the connection within ${this.o.handshakeTimeoutMs} ms`,
      );
    }, this.o.handshakeTimeoutMs);
    timer.unref();
    tab.pending.set(conn, { link, timer });
    tab.link.sendText(toWireJson({ type: "incoming", v: PROTOCOL_VERSION, conn }));
  }

  /** /relay/<id>/<conn>: the tab takes a connection dialled to it. */
  take(link: Link, id: string, conn: string): void {
    const waiting = this.tabs.get(id)?.pending.get(conn);
    if (!waiting) return link.close(CLOSE.policy, "no connection waits under this name");
    clearTimeout(waiting.timer);
    this.tabs.get(id)!.pending.delete(conn);
    relayLinks(waiting.link, link);
  }

  private drop(id: string): void {
    const tab = this.tabs.get(id);
    if (!tab) return;
    this.tabs.delete(id);
    for (const p of tab.pending.values()) {
      clearTimeout(p.timer);
      p.link.close(CLOSE.goingAway, "the browser tab left");
    }
  }

  close(): void {
    for (const [id, tab] of this.tabs) {
      tab.link.close(CLOSE.normal, "the driver closed the cluster");
      this.drop(id);
    }
  }
}
