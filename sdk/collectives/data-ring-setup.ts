import type { NativeAddon } from "../backends/native/addon";
import { ProtocolError, TimeoutError } from "../errors/errors";
import { toWireJson } from "../protocol/json";
import { DataPortSchema } from "../protocol/messages";
import { PROTOCOL_VERSION } from "../protocol/version";
import type { Link } from "../transport/link";
import { nextFrame, parseSmallJson } from "../transport/next-frame";
import { dataPlaneError } from "./native-plane";
import type { NativeRingOptions } from "./native-ring";

export interface DataRingSetup {
  addon: NativeAddon;
  /** The authenticated WebSocket ring links: the ports are told over them. */
  fromPrev: Link;
  toNext: Link;
  /** Where this worker listens (its own address, as its control plane binds). */
  listenHost: string;
  /** The previous position's host, as the driver reached it. */
  prevHost: string;
  rank: number;
  prevRank: number;
  nextRank: number;
  prevName: string;
  nextName: string;
  position: number;
  size: number;
  chunkElements: number;
  token: string;
  timeoutMs: number;
}

/**
 * Connects a ring's native data links: each position listens on a fresh port of its own
 * address, tells it to the next position over their WebSocket link, dials the previous
 * position's port and accepts the next one's; both connections prove the cluster token
 * (native/src/dp_net.c) before a tensor byte crosses them.
 */
export async function connectDataRing(o: DataRingSetup): Promise<NativeRingOptions> {
  const listener = o.addon.dataListen(o.listenHost);
  try {
    o.toNext.sendText(toWireJson({ type: "dataPort", v: PROTOCOL_VERSION, port: listener.port }));
    const prevPort = await nextFrame(o.fromPrev, {
      timeoutMs: o.timeoutMs,
      parse: (text) => {
        const r = DataPortSchema.safeParse(parseSmallJson(text, 256, "data port", o.prevName));
        if (!r.success)
          throw new ProtocolError(
            `${o.prevName} sent no data port where one was expected: ${r.error.issues[0]?.message ?? "?"}`,
          );
        return r.data.port;
      },
      onTimeout: () =>
        new TimeoutError(`waited ${o.timeoutMs} ms for ${o.prevName} to tell its data port`, {
          details: { rank: o.rank, waitingFor: `data port of ${o.prevName}` },
        }),
      onBinary: () => new ProtocolError(`binary frame from ${o.prevName} where its data port was expected`),
      onClose: (code) =>
        new ProtocolError(`${o.prevName} closed the ring link (code ${code}) before telling its data port`),
    });
    const hint = `${o.prevName} and ${o.nextName} must reach this worker's address on any TCP port (the data plane listens on a fresh one per ring); or use .dataPlane("websocket")`;
    const [prev, next] = await Promise.allSettled([
      o.addon.dataDial(o.prevHost, prevPort, o.token, o.rank, o.timeoutMs, o.prevName),
      o.addon.dataAccept(listener.fd, o.token, o.nextRank, o.timeoutMs, o.nextName),
    ]);
    if (prev.status === "rejected" || next.status === "rejected") {
      if (prev.status === "fulfilled") o.addon.dataClose(prev.value);
      if (next.status === "fulfilled") o.addon.dataClose(next.value);
      const why = prev.status === "rejected" ? prev.reason : (next as PromiseRejectedResult).reason;
      throw dataPlaneError(why, { rank: o.rank, waitingFor: `data links with ${o.prevName} and ${o.nextName}` }, hint);
    }
    return {
      prevFd: prev.value,
      nextFd: next.value,
      prevName: o.prevName,
      nextName: o.nextName,
      position: o.position,
      size: o.size,
      chunkElements: o.chunkElements,
    };
  } finally {
    o.addon.dataClose(listener.fd);
  }
}

/** The host part of a worker's address (ws://host:port), brackets of an IPv6 literal removed. */
export function hostOf(address: string): string {
  return new URL(address).hostname.replace(/^\[(.*)\]$/, "$1");
}
