import { AuthError, ProtocolError, TimeoutError } from "../errors/errors";
import { toWireJson } from "../protocol/json";
import { MessageSchema, type MessageOf } from "../protocol/messages";
import { PROTOCOL_VERSION } from "../protocol/version";
import { VERSION } from "../protocol/sdk-version";
import { mac, macEquals, newNonce } from "./auth";
import { CLOSE, type Link } from "./link";
import { nextFrame, parseSmallJson } from "./next-frame";

/** Handshake frames are small; anything bigger before authentication is refused. */
const MAX_HANDSHAKE_FRAME = 4096;

export type AuthMessage = MessageOf<"auth">;

/**
 * Waits for one text frame of the expected type. Binary frames, other types, oversized or
 * malformed frames before authentication end the connection.
 */
function handshakeFrame<T extends "challenge" | "auth" | "welcome">(
  link: Link,
  type: T,
  timeoutMs: number,
  who: string,
): Promise<MessageOf<T>> {
  return nextFrame(link, {
    timeoutMs,
    parse: (text) => parseHandshakeFrame(text, type, who, link.address),
    onTimeout: () =>
      new TimeoutError(`handshake with ${who} timed out after ${timeoutMs} ms waiting for "${type}"`, {
        details: { address: link.address, waitingFor: `${type} from ${who}` },
        hint: "check that both sides run meshtrain with the same protocol version and that nothing proxies the connection",
      }),
    onBinary: () => new ProtocolError(`binary frame from ${who} before authentication`),
    onClose: (code, reason) =>
      code === CLOSE.authFailed
        ? new AuthError(`${who} refused the cluster token${reason ? `: ${reason}` : ""}`, {
            details: { address: link.address },
            hint: "use the token the worker was started with (meshtrain worker --token, or MESHTRAIN_TOKEN)",
          })
        : new ProtocolError(
            `${who} closed the connection during the handshake (code ${code}${reason ? `, ${reason}` : ""})`,
            {
              details: { address: link.address },
            },
          ),
  });
}

/** A handshake frame checked: size, JSON, protocol version, schema, a refusal, the type expected. Throws what is wrong. */
function parseHandshakeFrame<T extends "challenge" | "auth" | "welcome">(
  text: string,
  type: T,
  who: string,
  address: string,
): MessageOf<T> {
  const parsed = parseSmallJson(text, MAX_HANDSHAKE_FRAME, "handshake", who);
  const version = (parsed as { v?: unknown } | null)?.v;
  if (version !== undefined && version !== PROTOCOL_VERSION) {
    throw new ProtocolError(`${who} speaks protocol version ${String(version)}, this side speaks ${PROTOCOL_VERSION}`, {
      hint: "install the same meshtrain version on the driver and every worker",
    });
  }
  const result = MessageSchema.safeParse(parsed);
  if (!result.success)
    throw new ProtocolError(`invalid handshake frame from ${who}: ${result.error.issues[0]?.message ?? "?"}`);
  const msg = result.data;
  if (msg.type === "error") {
    const wire = msg.error;
    const Cls = wire.code === "MT_ERR_AUTH" ? AuthError : ProtocolError;
    throw new Cls(`${who} refused the connection: ${wire.message}`, { hint: wire.hint, details: { address } });
  }
  if (msg.type !== type)
    throw new ProtocolError(`expected "${type}" from ${who} during the handshake, got "${msg.type}"`);
  return msg as MessageOf<T>;
}

function send(link: Link, msg: object): void {
  link.sendText(toWireJson({ ...msg, v: PROTOCOL_VERSION }));
}

export interface ServerHandshakeOptions {
  token: string;
  timeoutMs: number;
  server: { version: string; pid: number };
}

/**
 * Worker side. Resolves with the client's auth message once the client proved the token and
 * received our proof; on failure sends an error, closes the link and rejects.
 */
export async function acceptHandshake(link: Link, o: ServerHandshakeOptions): Promise<AuthMessage> {
  const nonce = newNonce();
  const who = `client ${link.address}`;
  send(link, { type: "challenge", nonce, server: o.server });
  let auth: AuthMessage;
  try {
    auth = await handshakeFrame(link, "auth", o.timeoutMs, who);
  } catch (err) {
    const code = err instanceof TimeoutError ? CLOSE.handshakeTimeout : CLOSE.protocolError;
    link.close(code, "handshake failed");
    throw err;
  }
  if (!macEquals(auth.mac, mac(o.token, "client", nonce, auth.nonce))) {
    const wire = {
      code: "MT_ERR_AUTH",
      message: "the client did not prove the cluster token",
      hint: "use the token this worker was started with",
    };
    send(link, { type: "error", error: wire });
    link.close(CLOSE.authFailed, "wrong token");
    throw new AuthError(`${who} failed authentication (wrong token)`, { details: { address: link.address } });
  }
  send(link, { type: "welcome", mac: mac(o.token, "server", nonce, auth.nonce) });
  return auth;
}

export interface ClientHandshakeOptions {
  token: string;
  timeoutMs: number;
  role: "driver" | "peer" | "joining" | "relay";
  peer?: { session: string; rank: number; link: "ring" | "pipe" | "ps" };
  /** Names the other end in errors, e.g. "worker rank 2". */
  who: string;
}

/** Driver or peer side. Resolves with the worker's challenge once both sides proved the token. */
export async function offerHandshake(link: Link, o: ClientHandshakeOptions): Promise<MessageOf<"challenge">> {
  const challenge = await handshakeFrame(link, "challenge", o.timeoutMs, o.who);
  // The same protocol is not enough: a worker of another version runs other code for the same
  // messages (a worker bundle made by an older install, a host not upgraded with the others).
  if (o.role === "driver" && challenge.server.version !== VERSION) {
    link.close(CLOSE.protocolError, "another meshtrain version");
    throw new ProtocolError(
      `${o.who} at ${link.address} runs meshtrain ${challenge.server.version}, this driver runs ${VERSION}`,
      {
        details: { address: link.address, worker: challenge.server.version, driver: VERSION },
        hint: `give every host meshtrain ${VERSION}: npm install meshtrain@${VERSION} there, or a worker bundle this driver's installation made (meshtrain bundle)`,
      },
    );
  }
  const nonce = newNonce();
  send(link, {
    type: "auth",
    nonce,
    mac: mac(o.token, "client", challenge.nonce, nonce),
    role: o.role,
    ...(o.peer ? { peer: o.peer } : {}),
  });
  const welcome = await handshakeFrame(link, "welcome", o.timeoutMs, o.who);
  if (!macEquals(welcome.mac, mac(o.token, "server", challenge.nonce, nonce))) {
    link.close(CLOSE.authFailed, "server proof failed");
    throw new AuthError(`${o.who} at ${link.address} could not prove it knows the cluster token`, {
      details: { address: link.address },
      hint: "something else answers at this address, or it was started with another token",
    });
  }
  return challenge;
}
