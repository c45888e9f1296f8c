import type { ErrorDetails } from "../../errors/errors";
import { Channel, type ChannelOptions } from "../../transport/channel";
import type { Link } from "../../transport/link";
import { recycledArrays } from "./recycled-arrays";
import { config, log, MAX_ATTACHMENT_BYTES } from "./thread";

/**
 * A control channel to the driver or a peer, with this worker's limits; refused frames are
 * logged. Its binary frames are read into one kept buffer (Link.lendBinary) and its
 * attachments into arrays the compute thread gave back: a step's batch allocates nothing.
 * Read the usual way (ws's frames, the socket's reads and new arrays, a step's worth each,
 * left to V8's collections), a 2-worker demo's workers each held 77-80 MiB above their idle
 * process against an estimate of 20.5; read this way, 21.6-25.7 (docs/native-step.md).
 */
export function channelTo(
  link: Link,
  peerName: string,
  details: ErrorDetails,
  on: Pick<ChannelOptions, "onMessage" | "onClose">,
): Channel {
  const channel = new Channel(link, {
    peerName,
    details,
    chunkElements: 256 * 1024,
    maxFrameBytes: config.maxFrameBytes,
    maxAttachmentBytes: MAX_ATTACHMENT_BYTES,
    ...on,
    allocate: (dtype, length) => recycledArrays.take(dtype, length),
    onInvalid: (err) => log(`refused a frame from ${peerName}: ${err.summary}`),
  });
  link.lendBinary?.();
  return channel;
}
