import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { isSoftware } from "../../sdk/backends/webgpu/dawn";
import { hardwareVulkanDriver, icdManifests, vulkanEnv } from "../../sdk/backends/webgpu/vulkan";
import { deviceFromEnv } from "../../sdk/config/device";

/** How a worker is pointed at a GPU: which Vulkan drivers count, which are software, and what environment a worker gets. */

function manifest(dir: string, name: string, library: string): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, JSON.stringify({ file_format_version: "1.0.0", ICD: { library_path: library, api_version: "1.3.0" } }));
  return f;
}

test("the drivers VK_ICD_FILENAMES names are the ones counted, software ones known by name; a worker given one sees only it", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-vk-"));
  try {
    const soft = manifest(dir, "vk_swiftshader_icd.json", "./libvk_swiftshader.so");
    const lvp = manifest(dir, "lvp_icd.x86_64.json", "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so");
    const gpu = manifest(dir, "nvidia_icd.json", "libGLX_nvidia.so.0");
    fs.writeFileSync(path.join(dir, "broken.json"), "{ not json");
    const env = { VK_ICD_FILENAMES: [soft, lvp, gpu, path.join(dir, "broken.json")].join(":") };
    assert.deepEqual(icdManifests(env).map((m) => [path.basename(m.file), m.software]), [["vk_swiftshader_icd.json", true], ["lvp_icd.x86_64.json", true], ["nvidia_icd.json", false]]);
    assert.equal(icdManifests({ VK_DRIVER_FILES: soft }).length, 1, "the loader's newer name for the same override");
    const one = icdManifests({ VK_ICD_FILENAMES: gpu })[0]!;
    assert.equal(vulkanEnv(one, {}).VK_ICD_FILENAMES, gpu);
    assert.equal(vulkanEnv(null, { VK_ICD_FILENAMES: `${soft}:${gpu}` }).VK_ICD_FILENAMES, `${soft}:${gpu}`);
    assert.equal(hardwareVulkanDriver({ VK_ICD_FILENAMES: soft, LD_LIBRARY_PATH: "/usr/lib/chromium" }), false, "a software driver alone is not worth a look from auto");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("software adapters are told apart from GPUs: the browser's flag, else the known software drivers", () => {
  const info = (o: Partial<{ vendor: string; architecture: string; device: string; description: string; isFallbackAdapter: boolean }>) => ({ vendor: "", architecture: "", device: "", description: "", ...o });
  assert.equal(isSoftware(info({ vendor: "google", architecture: "swiftshader", description: "SwiftShader driver 5.0.0" })), true);
  assert.equal(isSoftware(info({ description: "llvmpipe (LLVM 15.0.6, 256 bits)" })), true);
  assert.equal(isSoftware(info({ vendor: "nvidia", architecture: "ampere", description: "NVIDIA 535.104" })), false);
  assert.equal(isSoftware(info({ vendor: "intel", isFallbackAdapter: true })), true);
});

test("a worker's device assignment is read as given, and a malformed one is said, not guessed at", () => {
  assert.equal(deviceFromEnv({}), null);
  assert.deepEqual(deviceFromEnv({ MESHTRAIN_DEVICE: JSON.stringify({ kind: "webgpu", adapter: "SwiftShader Device (Subzero)", software: true }) }), { kind: "webgpu", adapter: "SwiftShader Device (Subzero)", software: true });
  assert.throws(() => deviceFromEnv({ MESHTRAIN_DEVICE: "{" }), /MESHTRAIN_DEVICE is not JSON/);
  assert.throws(() => deviceFromEnv({ MESHTRAIN_DEVICE: JSON.stringify({ kind: "tpu" }) }), /does not name a device/);
});
