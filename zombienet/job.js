// The job scenario: starts three `grid-trainer provide` daemons (Bob, Charlie and Dave as
// providers) against the full node, posts the three-round MNIST job
// (examples/mnist-job.toml) as Alice with the buyer CLI,
// and returns 1 once the chain has finalized the job's completion with every round settled
// and each provider paid for each round. `GRID_TRAINER` is the trainer binary's absolute path
// (`scripts/zombienet.sh` sets it); everything lives in a temporary directory and every
// trainer is killed on the way out. `JOB_LOG` replaces the providers' `RUST_LOG` (e.g.
// "info,grid_trainer=debug,libp2p_gossipsub=debug" to see a lost message's way).
const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");

const PROVIDERS = ["Bob", "Charlie", "Dave"];
// The quick MNIST job the end-to-end tests post too (three rounds, three providers needed).
const JOB = fs.readFileSync(path.join(__dirname, "..", "examples", "mnist-job.toml"), "utf8");
const ROUNDS = Number(/^rounds = (\d+)$/m.exec(JOB)[1]);

/** A free TCP port on 127.0.0.1, below the kernel's ephemeral range (32768 and up), from
 * which outgoing connections take their local ports: one found free there can be taken
 * before the process meant to listen on it binds it (grid_primitives::ports, the tests' rule). */
async function freePort() {
	for (let tries = 0; tries < 200; tries++) {
		const port = 10000 + Math.floor(Math.random() * 22000);
		const free = await new Promise((ok) => {
			const server = net.createServer();
			server.once("error", () => ok(false));
			server.listen(port, "127.0.0.1", () => server.close(() => ok(true)));
		});
		if (free) return port;
	}
	throw new Error("no free loopback port from 10000 to 31999");
}

async function providerConfig(dir, name, url) {
	const [p2p, status] = [await freePort(), await freePort()];
	const file = path.join(dir, `${name.toLowerCase()}.toml`);
	fs.writeFileSync(
		file,
		`name = "${name.toLowerCase()}"
data_dir = "${path.join(dir, name.toLowerCase())}"
listen = "/ip4/127.0.0.1/tcp/${p2p}"
threads = 1

[chain]
url = "${url}"
account = "//${name}"
stake = 200
endpoint = "http://127.0.0.1:${status}/health"
serve_final_secs = 5

[training]
eval_samples = 500
# A 10k-image dataset: uncapped, a round of MNIST steps overfits it.
max_steps = 100
`,
	);
	return file;
}

function tail(file, lines) {
	try {
		return fs.readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
	} catch (e) {
		return `(no log: ${e.message})`;
	}
}

// Events of the job in finalized blocks, read block by block from `from`.
async function finalizedEvents(api, from, seen) {
	const head = (await api.rpc.chain.getHeader(await api.rpc.chain.getFinalizedHead())).number.toNumber();
	for (let n = from; n <= head; n++) {
		const hash = await api.rpc.chain.getBlockHash(n);
		const events = await (await api.at(hash)).query.system.events();
		for (const { event } of events) {
			if (event.section === "jobs") seen.push({ block: n, method: event.method, data: event.data.toJSON() });
		}
	}
	return head + 1;
}

async function run(nodeName, networkInfo) {
	const trainer = process.env.GRID_TRAINER;
	if (!trainer || !fs.existsSync(trainer)) throw new Error(`GRID_TRAINER (${trainer}) is not a file`);
	const url = networkInfo.nodesByName[nodeName].wsUri;
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "grid-zombienet-job-"));
	const children = [];
	const api = await zombie.connect(url);
	try {
		const from = (await api.rpc.chain.getHeader()).number.toNumber();
		for (const name of PROVIDERS) {
			const config = await providerConfig(dir, name, url);
			const log = fs.openSync(path.join(dir, `${name}.log`), "a");
			const child = spawn(trainer, ["provide", "--config", config], {
				stdio: ["ignore", "ignore", log],
				env: { ...process.env, RUST_LOG: process.env.JOB_LOG || "info,libp2p_gossipsub=warn" },
			});
			children.push(child);
		}
		const spec = path.join(dir, "job.toml");
		fs.writeFileSync(spec, JOB);
		const created = execFileSync(trainer, ["job", "create", "--url", url, "--account", "//Alice", "--spec", spec]);
		console.log(created.toString().trim());

		const seen = [];
		let next = from;
		for (;;) {
			next = await finalizedEvents(api, next, seen);
			if (seen.some((e) => e.method === "JobCompleted")) break;
			if (children.some((c) => c.exitCode !== null && c.exitCode !== 0)) {
				throw new Error("a provider exited early");
			}
			await new Promise((resolve) => setTimeout(resolve, 2000));
		}
		// RoundSettled { job, round, result_model_hash, paid, fee, refunded }: with a result.
		const settled = seen.filter((e) => e.method === "RoundSettled" && e.data[2] !== null).map((e) => e.data[1]);
		const paid = seen.filter((e) => e.method === "RewardPaid");
		console.log(`finalized: rounds settled ${JSON.stringify(settled)}, ${paid.length} rewards paid`);
		if (settled.length !== ROUNDS) throw new Error(`${settled.length} rounds settled, not ${ROUNDS}`);
		const keyring = new zombie.Keyring({ type: "sr25519" });
		for (const name of PROVIDERS) {
			const who = keyring.addFromUri(`//${name}`).address;
			// RewardPaid { job, round, who, amount }
			const rounds = paid.filter((e) => e.data[2] === who).map((e) => e.data[1]).sort();
			if (JSON.stringify(rounds) !== JSON.stringify([...Array(ROUNDS).keys()])) {
				throw new Error(`${name} was paid for rounds ${JSON.stringify(rounds)}`);
			}
		}
		return 1;
	} catch (e) {
		for (const name of PROVIDERS) console.log(`--- ${name} ---\n${tail(path.join(dir, `${name}.log`), 20)}`);
		throw e;
	} finally {
		for (const child of children) child.kill("SIGKILL");
		await api.disconnect();
	}
}

module.exports = { run };
