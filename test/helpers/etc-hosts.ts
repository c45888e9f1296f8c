import * as fs from "node:fs";

/**
 * Names a host in /etc/hosts, as a cluster's DNS would (the tests run as root); the returned
 * function takes the line out again. getaddrinfo reads the file on every lookup, so the name
 * resolves from the moment the line is there.
 */
export function addHostsLine(line: string): () => void {
  const hosts = fs.readFileSync("/etc/hosts", "utf8");
  if (!hosts.split("\n").includes(line)) fs.appendFileSync("/etc/hosts", `${hosts.endsWith("\n") ? "" : "\n"}${line}\n`);
  return () => fs.writeFileSync("/etc/hosts", fs.readFileSync("/etc/hosts", "utf8").split("\n").filter((l) => l !== line).join("\n"));
}
