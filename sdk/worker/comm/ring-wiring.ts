import type { AllReducer } from "../../collectives/all-reducer";
import { nativeDataPlane } from "../../collectives/native-plane";
import { connectDataRing, hostOf } from "../../collectives/data-ring-setup";
import { ringOverLinks, watchedRing, type RingLinks } from "../../collectives/ring-over-links";
import { ConfigError } from "../../errors/errors";
import type { MessageOf } from "../../protocol/messages";
import { ComputeSideRing } from "./compute-side-ring";
import { config } from "./thread";

/**
 * The ring a configure asks for, over the WebSocket links already connected: its bytes on those
 * links, or (dataPlane "native") on native data links connected beside them, which the compute
 * thread drives itself, the WebSocket links then carrying heartbeats only.
 */
export async function wireRing(
  msg: MessageOf<"configure">,
  links: RingLinks,
  ranks: { rank: number; prev: number; next: number },
): Promise<{ ring: AllReducer; close(): void }> {
  if (msg.dataPlane !== "native") return ringOverLinks(links);
  const plane = nativeDataPlane();
  if (!plane.ok) {
    throw new ConfigError(
      `rank ${ranks.rank} cannot carry the all-reduce over the native data plane: ${plane.reason}`,
      {
        details: { rank: ranks.rank },
        hint: 'run npm install on that worker (it builds the addon), or use .dataPlane("websocket")',
      },
    );
  }
  const native = await connectDataRing({
    addon: plane.addon,
    fromPrev: links.fromPrev,
    toNext: links.toNext,
    listenHost: config.host,
    prevHost: hostOf(msg.addresses[ranks.prev]!),
    rank: ranks.rank,
    prevRank: ranks.prev,
    nextRank: ranks.next,
    prevName: links.prevName,
    nextName: links.nextName,
    position: links.position,
    size: links.size,
    chunkElements: links.chunkElements,
    token: config.token,
    timeoutMs: msg.connectTimeoutMs,
  });
  return watchedRing(links, new ComputeSideRing(plane.addon, native));
}
