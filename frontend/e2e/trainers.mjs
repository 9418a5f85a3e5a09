// Real `grid-trainer` providers for the browser test: a provider file per trainer in a
// temporary directory (free loopback ports), `grid-trainer registration` for the browser's
// "Register" form, `grid-trainer provide` as a child process killed by `stopAll`.
import { execFile, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const trainerBin = process.env.GRID_TRAINER ?? join(process.env.HOME ?? "", ".cache/grid-target/release/grid-trainer");

/** A free TCP port on 127.0.0.1, below the kernel's ephemeral range (32768 and up), from
 * which outgoing connections take their local ports: one found free there can be taken
 * before the process meant to listen on it binds it (grid_primitives::ports, the tests' rule). */
async function freePort() {
  for (let tries = 0; tries < 200; tries++) {
    const port = 10000 + Math.floor(Math.random() * 22000);
    const free = await new Promise((ok) => {
      const server = createServer();
      server.once("error", () => ok(false));
      server.listen(port, "127.0.0.1", () => server.close(() => ok(true)));
    });
    if (free) return port;
  }
  throw new Error("no free loopback port from 10000 to 31999");
}

export class Trainers {
  constructor(rpc) {
    if (!existsSync(trainerBin)) throw new Error(`no grid-trainer at ${trainerBin}: build the workspace or set GRID_TRAINER`);
    this.rpc = rpc;
    this.root = mkdtempSync(join(tmpdir(), "grid-e2e-trainers-"));
    this.children = [];
  }

  /** Writes `<name>.toml` for `account` (a dev secret, `//Charlie`); returns its path. */
  async configure(name, account, job) {
    mkdirSync(join(this.root, name), { recursive: true });
    const path = join(this.root, `${name}.toml`);
    writeFileSync(
      path,
      `name = "${name}"
data_dir = "${name}"
listen = "/ip4/127.0.0.1/tcp/${await freePort()}"
threads = 1

[chain]
url = "${this.rpc}"
account = "${account}"
stake = 200
${job === undefined ? "" : `job = ${job}`}
endpoint = "http://127.0.0.1:${await freePort()}/health"
serve_final_secs = 30

[training]
eval_samples = 200
# A 10k-image dataset: uncapped, a round of MNIST steps overfits it.
max_steps = 100
`,
    );
    return path;
  }

  /** Sets the job a configured provider joins. */
  setJob(path, job) {
    const text = readFileSync(path, "utf8").replace(/^job = \d+\n/m, "");
    writeFileSync(path, text.replace(/^stake = (.*)$/m, `stake = $1\njob = ${job}`));
  }

  /** `grid-trainer registration --config path`: the JSON the browser's form takes. */
  registration(path) {
    return new Promise((ok, fail) =>
      execFile(trainerBin, ["registration", "--config", path], { timeout: 30_000 }, (error, stdout, stderr) =>
        error ? fail(new Error(`grid-trainer registration failed: ${stderr || error.message}`)) : ok(stdout),
      ),
    );
  }

  /** Starts `grid-trainer provide --config path`, its log beside the file. */
  provide(path) {
    const log = createWriteStream(path.replace(/\.toml$/, ".log"));
    const child = spawn(trainerBin, ["provide", "--config", path], {
      env: { ...process.env, RUST_LOG: "info,libp2p_gossipsub=warn" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr.pipe(log);
    this.children.push({ child, path });
    return child;
  }

  /** The last lines of each provider's log, for a failure report. */
  logTails(lines = 15) {
    return this.children
      .map(({ path }) => {
        const file = path.replace(/\.toml$/, ".log");
        const text = existsSync(file) ? readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n") : "(no log)";
        return `--- ${file}\n${text}`;
      })
      .join("\n");
  }

  /** Deletes the providers' files (after a passing run). */
  remove() {
    rmSync(this.root, { recursive: true, force: true });
  }

  /** Kills every provider started and waits for them to exit. */
  async stopAll() {
    await Promise.all(
      this.children.map(
        ({ child }) =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once("exit", done);
            child.kill("SIGKILL");
          }),
      ),
    );
  }
}
