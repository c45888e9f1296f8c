import assert from "node:assert/strict";
import { test } from "node:test";
import { judgePreflight, preflightProblem } from "../../sdk/launchers/preflight-report";
import { parseSshTarget, shellQuote, sshArgv } from "../../sdk/launchers/ssh-target";
import { ConfigError } from "../../sdk/errors/errors";

const expect = { command: "node cli.js", version: "1.2.0", nodeMajor: 20, driverUrl: "ws://10.0.0.1:7071" };
const answer = (o: object): string => `${JSON.stringify({ meshtrain: "1.2.0", node: "v20.11.0", reach: null, ...o })}\n`;

test("judgePreflight: each way a host can fail, in words that say what to do", () => {
  assert.equal(judgePreflight({ code: 0, stdout: answer({}), stderr: "" }, expect), null);
  assert.match(judgePreflight({ code: 255, stdout: "", stderr: "root@h: Permission denied (publickey).\n" }, expect)!, /^unreachable over ssh \(root@h: Permission denied \(publickey\)\.\)/);
  assert.match(judgePreflight({ code: 127, stdout: "", stderr: "sh: 1: node: not found\n" }, expect)!, /^cannot run node cli\.js there \(sh: 1: node: not found\)/);
  assert.match(judgePreflight({ code: 1, stdout: "", stderr: "Error: Cannot find module '/x/cli.js'\n    at ...\n" }, expect)!, /^meshtrain is missing there \(\/x\/cli\.js\): install meshtrain 1\.2\.0/);
  assert.match(judgePreflight({ code: 0, stdout: answer({ node: "v18.19.0" }), stderr: "" }, expect)!, /^node v18\.19\.0 there; meshtrain needs node 20 or newer/);
  assert.match(judgePreflight({ code: 0, stdout: answer({ meshtrain: "1.1.0" }), stderr: "" }, expect)!, /^meshtrain 1\.1\.0 there; the driver runs 1\.2\.0/);
  assert.match(judgePreflight({ code: 0, stdout: answer({ reach: "EHOSTUNREACH" }), stderr: "" }, expect)!, /ws:\/\/10\.0\.0\.1:7071 is not reachable from there \(EHOSTUNREACH\): pass ssh\(hosts, \{ driverHost \}\)/);
  assert.match(judgePreflight({ code: 1, stdout: "Usage: something else\n", stderr: "" }, expect)!, /did not answer as meshtrain does/);
});

test('preflightProblem: ship "auto" sends the bundle where only meshtrain is wrong, never where ssh, node or the network is', () => {
  const helps = (run: { code: number; stdout: string; stderr: string }): boolean | undefined => preflightProblem(run, expect)?.bundleHelps;
  assert.equal(helps({ code: 127, stdout: "", stderr: "sh: 1: /opt/node: not found\n" }), true);
  assert.equal(helps({ code: 1, stdout: "", stderr: "Error: Cannot find module '/x/cli.js'\n" }), true);
  assert.equal(helps({ code: 0, stdout: answer({ meshtrain: "1.1.0" }), stderr: "" }), true);
  assert.equal(helps({ code: 1, stdout: "Usage: something else\n", stderr: "" }), true);
  assert.equal(helps({ code: 255, stdout: "", stderr: "ssh: connect to host h port 22: Connection refused\n" }), false);
  assert.equal(helps({ code: 0, stdout: answer({ node: "v18.19.0" }), stderr: "" }), false);
  assert.equal(helps({ code: 0, stdout: answer({ reach: "ECONNREFUSED" }), stderr: "" }), false);
  assert.equal(preflightProblem({ code: 0, stdout: answer({}), stderr: "" }, expect), null);
});

test("ssh targets: host, user@host, user@host:port; ssh never prompts; remote arguments quoted", () => {
  assert.deepEqual(parseSshTarget("alice@node2:2222"), { destination: "alice@node2", port: 2222, label: "alice@node2:2222" });
  assert.deepEqual(parseSshTarget("node1"), { destination: "node1", port: undefined, label: "node1" });
  assert.throws(() => parseSshTarget("node 1"), ConfigError);
  const argv = sshArgv(parseSshTarget("n:2"), ["-F", "cfg"], "cmd");
  assert.deepEqual(argv.slice(-7), ["-F", "cfg", "-p", "2", "n", "--", "cmd"]);
  assert.ok(argv.includes("BatchMode=yes"));
  assert.equal(shellQuote("/usr/bin/node"), "/usr/bin/node");
  assert.equal(shellQuote("it's a path"), `'it'\\''s a path'`);
});
