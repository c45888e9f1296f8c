import { createHmac, randomBytes } from "node:crypto";
import * as net from "node:net";
import type { NativeAddon } from "../../sdk/backends/native/addon";
import { nativeDataPlane } from "../../sdk/collectives/native-plane";
import { NativeRing } from "../../sdk/collectives/native-ring";

export const TOKEN = "native-data-plane-test-token-0123";

export function addon(): NativeAddon {
  const plane = nativeDataPlane();
  if (!plane.ok) throw new Error(`the native data plane is needed here: ${plane.reason}`);
  return plane.addon;
}

/** n positions in this process, each dialling the one before over 127.0.0.1 with the token. */
export async function nativeRings(n: number, chunkElements: number): Promise<NativeRing[]> {
  const a = addon();
  const listeners = Array.from({ length: n }, () => a.dataListen("127.0.0.1"));
  try {
    // Position p dials p-1 (its previous) and accepts p+1 (its next).
    const pairs = await Promise.all(
      Array.from({ length: n }, (_, p) => {
        const prev = (p - 1 + n) % n;
        return Promise.all([a.dataDial("127.0.0.1", listeners[prev]!.port, TOKEN, p, 5000, `rank ${prev}`), a.dataAccept(listeners[p]!.fd, TOKEN, (p + 1) % n, 5000, `rank ${(p + 1) % n}`)]);
      }),
    );
    return pairs.map(([prevFd, nextFd], p) => new NativeRing(a, { prevFd, nextFd, prevName: `rank ${(p - 1 + n) % n}`, nextName: `rank ${(p + 1) % n}`, position: p, size: n, chunkElements }));
  } finally {
    for (const l of listeners) a.dataClose(l.fd);
  }
}

/**
 * The client's half of the data plane's handshake written from its description in
 * native/src/dp_net.c, in JavaScript: an independent check of the C side, and a way to stand
 * where a peer stands and then misbehave. Resolves with the verdict byte and, if welcomed, the open socket.
 */
export function dialAsPeer(port: number, token: string, rank: number): Promise<{ socket: net.Socket; verdict: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let got = Buffer.alloc(0);
    let stage = 0;
    let clientNonce = Buffer.alloc(0);
    let serverNonce = Buffer.alloc(0);
    socket.on("error", reject);
    socket.on("data", (d) => {
      got = Buffer.concat([got, d]);
      if (stage === 0 && got.length >= 40) {
        serverNonce = got.subarray(8, 40);
        got = got.subarray(40);
        clientNonce = randomBytes(32);
        const rank4 = Buffer.alloc(4);
        rank4.writeUInt32LE(rank);
        const mac = createHmac("sha256", token).update(Buffer.concat([Buffer.from("meshtrain-data-v1|client|"), serverNonce, clientNonce, rank4])).digest();
        const version = Buffer.alloc(4);
        version.writeUInt32LE(1);
        socket.write(Buffer.concat([Buffer.from("MTDP"), version, clientNonce, rank4, mac]));
        stage = 1;
      }
      if (stage === 1 && got.length >= 33) {
        stage = 2;
        const verdict = got[0]!;
        if (verdict === 0) {
          const want = createHmac("sha256", token).update(Buffer.concat([Buffer.from("meshtrain-data-v1|server|"), serverNonce, clientNonce])).digest();
          if (!want.equals(got.subarray(1, 33))) reject(new Error("the server's proof did not check out"));
        }
        socket.removeAllListeners("data");
        // A refused peer has nothing more to say; the server has closed its end.
        if (verdict !== 0) socket.destroy();
        resolve({ socket, verdict });
      }
    });
  });
}

/** An all-reduce operation's header as the C side writes it ("MTAR", version 2, format, seq, elements, 16-bit count). */
export function opHeader(seq: number, elements: number, format = 0, packed = 0): Buffer {
  const h = Buffer.alloc(32);
  h.write("MTAR", 0, "latin1");
  h.writeUInt16LE(2, 4);
  h.writeUInt8(format, 6);
  h.writeBigUInt64LE(BigInt(seq), 8);
  h.writeBigUInt64LE(BigInt(elements), 16);
  h.writeBigUInt64LE(BigInt(packed), 24);
  return h;
}
