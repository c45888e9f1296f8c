import type { ErrorDetails } from "../../errors/errors";
import { Channel, type ChannelOptions } from "../../transport/channel";
import type { Link } from "../../transport/link";
import { config, log, MAX_ATTACHMENT_BYTES } from "./thread";

/** A control channel to the driver or a peer, with this worker's limits; refused frames are logged. */
export function channelTo(
  link: Link,
  peerName: string,
  details: ErrorDetails,
  on: Pick<ChannelOptions, "onMessage" | "onClose">,
): Channel {
  return new Channel(link, {
    peerName,
    details,
    chunkElements: 256 * 1024,
    maxFrameBytes: config.maxFrameBytes,
    maxAttachmentBytes: MAX_ATTACHMENT_BYTES,
    ...on,
    onInvalid: (err) => log(`refused a frame from ${peerName}: ${err.summary}`),
  });
}
