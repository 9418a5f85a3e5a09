// A registration as `grid-trainer registration` prints it, for tests.
import { ALICE } from "./fixtures";

// `grid-trainer peer-id --key-seed 7`: its ed25519 public key and peer id.
export const PUBLIC = "0xdddd16ee27e8ee7f840f466ce3a3113d37524b69d16708eb749e580444765fc5";
export const PEER = "12D3KooWQkRoWiUVSDcRc2uttGoL6yw2UA6z2kWsAHc9jaB9Uuw2";
export const GENESIS = `0x${"12".repeat(32)}`;

/** What `grid-trainer registration` prints, for Alice. */
export function registrationJson(patch: Record<string, unknown> = {}, caps: Record<string, unknown> = {}) {
  return {
    format: "grid/registration/v1",
    genesis: GENESIS,
    account: ALICE,
    peer_id: PEER,
    peer_public: PUBLIC,
    peer_signature: `0x${"ab".repeat(64)}`,
    multiaddrs: [`/ip4/127.0.0.1/tcp/40333/p2p/${PEER}`],
    endpoint: "http://127.0.0.1:8090/health",
    stake_grid: 200,
    capabilities: {
      device: "Cpu",
      device_name: "x86_64 2-core",
      device_count: 1,
      memory_mib: 24_576,
      tflops_milli: 150,
      bandwidth_mbps: 1_000,
      region: "local",
      ...caps,
    },
    ...patch,
  };
}

