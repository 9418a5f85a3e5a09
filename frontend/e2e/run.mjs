// End-to-end test of the built UI in a real browser: Debian's Chromium (/usr/bin/chromium),
// driven headless by playwright-core (which downloads no browser), against a running grid-node.
//   npm run build && GRID_RPC=ws://127.0.0.1:9944 npm run test:e2e
// Serves dist/ with a tiny static server on a free port, then checks that
//   (a) the header shows the chain connected and a best block number that increases;
//   (b) as //Alice (picked in the account selector) the form's default job is posted, its
//       transaction reaches "In block" (or "Finalized"), and the job's page opens;
//   (c) //Charlie registers as a provider in the browser with the JSON `grid-trainer
//       registration` prints for its trainer's file, and is listed;
//   (d) as //Alice a 4-round MNIST job for two providers is posted through the form; real
//       `grid-trainer provide` processes for //Charlie (registered in (c)) and //Dave (who
//       registers himself) join it, and the job's page shows its rounds settling one by one
//       and each participant's 100 GRID stake lock for the job;
//   (e) the providers page lists both trainers;
//   (f) the network page shows the health table, the trainers' latency heat-map (their
//       /status read by the browser) and the event feed, starting with the blocks finalized
//       before the page opened (more than the four blocks before it: the history scan).
// The trainers' files and logs are in a temporary directory, removed when the test passes.
// Full-page screenshots of the main pages ({create,job,jobs,providers,network}.png) go to
// $E2E_SCREENSHOTS when set (the README's are docs/screenshots: E2E_SCREENSHOTS=docs/screenshots),
// else to a temporary directory, so a test run leaves the tree as it was.
// Env: GRID_RPC (required), CHROMIUM (default /usr/bin/chromium), E2E_HEADED=1 to watch it.
import { createReadStream, existsSync, mkdirSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import { dirname, extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { Trainers } from "./trainers.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const shots = process.env.E2E_SCREENSHOTS
  ? resolve(process.env.E2E_SCREENSHOTS)
  : mkdtempSync(join(tmpdir(), "grid-e2e-shots-"));
const rpc = process.env.GRID_RPC;
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

if (!rpc) {
  console.error("GRID_RPC is not set: point it at a running grid-node, e.g.\n  GRID_RPC=ws://127.0.0.1:9944 npm run test:e2e");
  process.exit(2);
}
if (!existsSync(join(dist, "index.html"))) {
  console.error(`${dist}/index.html is missing: run \`npm run build\` first.`);
  process.exit(2);
}
if (!existsSync(executablePath)) {
  console.error(`no Chromium at ${executablePath} (apt-get install chromium, or set CHROMIUM)`);
  process.exit(2);
}

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".wasm": "application/wasm",
};

/** Serves dist/ on 127.0.0.1 at a free port; unknown paths get index.html (hash routes anyway). */
function serve() {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    let file = join(dist, path);
    if (!file.startsWith(dist) || !existsSync(file) || statSync(file).isDirectory()) file = join(dist, "index.html");
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
    createReadStream(file).pipe(res);
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => ok(server));
  });
}

const started = Date.now();
const step = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${msg}`);
const bestNumber = async (page) => {
  const text = (await page.getByTestId("best").textContent()) ?? "";
  const m = /#([\d,]+)/.exec(text);
  return m ? Number(m[1].replaceAll(",", "")) : undefined;
};
/** Polls `read` until `ok(value)`, or throws `what` with the last value seen. */
async function until(what, read, ok, timeout = 30_000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await read();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} (after ${timeout / 1000} s; last seen: ${JSON.stringify(last)})`);
}

/** Picks the dev account whose label starts with `name` ("Alice (dev)") in the header. */
async function selectAccount(page, name) {
  const account = page.getByLabel("Account");
  const value = await until(
    `the account picker offers no ${name} account`,
    () => account.locator("option").evaluateAll((os, n) => os.find((o) => o.textContent.startsWith(n))?.value, name),
    (v) => !!v,
  );
  await account.selectOption(value);
  await until(`${name} is not selected`, () => account.evaluate((s) => s.selectedOptions[0]?.textContent ?? ""), (t) => t.startsWith(name));
}

/** Waits for the transaction status in `scope` to reach a block; throws its error otherwise. */
async function included(scope, what) {
  const reached = await until(
    `the ${what} transaction never reached "In block"`,
    () => scope.getByRole("status").first().textContent(),
    (t) => /In block #\d+|Finalized/.test(t) || /fail|error/i.test(t),
    60_000,
  );
  if (!/In block #\d+|Finalized/.test(reached)) throw new Error(`the ${what} transaction failed: ${reached}`);
  step(`${what}: ${/In block #\d+|Finalized #?\d*/.exec(reached)[0]}`);
}

/** Posts the job form as it stands, after setting `fields` (label → value); returns the id. */
async function postJob(page, fields = {}) {
  await page.getByRole("link", { name: "Post a job" }).click();
  const form = page.getByRole("form", { name: "Post a training job" });
  await form.waitFor();
  for (const [label, value] of Object.entries(fields)) {
    const input = form.getByLabel(label, { exact: true });
    if ((await input.evaluate((e) => e.tagName)) === "SELECT") await input.selectOption(value);
    else await input.fill(value);
  }
  const escrow = await until(
    "the escrow summary never showed a GRID total",
    () => page.getByTestId("escrow-total").textContent().catch(() => ""),
    (t) => /GRID/.test(t),
  );
  step(`job form filled; escrow ${/[\d.,]+ GRID/.exec(escrow)[0]}`);
  return { form, post: async () => {
    await form.getByRole("button", { name: "Sign and post job" }).click();
    await included(form, "create_job");
    const link = form.getByRole("link", { name: /^job #\d+$/ });
    await link.waitFor();
    return { link, id: Number((await link.textContent()).replace("job #", "")) };
  } };
}

/** The job page's "Rounds settled" progress value. */
const roundsSettled = (page) =>
  page.getByRole("progressbar", { name: "Rounds settled" }).getAttribute("value").then(Number).catch(() => -1);

let server;
let browser;
let trainers;
const pageErrors = [];
let failed = false;
try {
  server = await serve();
  const base = `http://127.0.0.1:${server.address().port}/?rpc=${encodeURIComponent(rpc)}`;
  step(`serving dist/ at ${base}`);
  browser = await chromium.launch({ executablePath, headless: !process.env.E2E_HEADED, args: ["--no-sandbox"] });
  step(`launched ${executablePath} (Chromium ${browser.version()})`);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(30_000);
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => m.type() === "error" && pageErrors.push(`console: ${m.text()}`));
  mkdirSync(shots, { recursive: true });

  // (a) connected, and the best block advances.
  await page.goto(`${base}#/jobs`);
  const header = page.locator("header");
  await header.getByText("Connected", { exact: true }).waitFor({ timeout: 30_000 }).catch(() => {
    throw new Error(`the header never showed "Connected" for ${rpc}`);
  });
  const first = await until("the header shows no best block number", () => bestNumber(page), (n) => n !== undefined);
  step(`connected; best #${first}`);
  const later = await until(`the best block stayed at #${first}`, () => bestNumber(page), (n) => n > first, 30_000);
  step(`best advanced to #${later}`);

  // (b) post the form's default job as //Alice.
  await selectAccount(page, "Alice (dev)");
  const shakespeare = await postJob(page);
  await page.screenshot({ path: join(shots, "create.png"), fullPage: true });
  const { link, id } = await shakespeare.post();
  await link.click();
  await page.getByRole("heading", { level: 1, name: new RegExp(`Job #${id}\\b`) }).waitFor();
  const held = await until(
    `job #${id}'s page shows no escrow held`,
    () => page.getByRole("region", { name: "Escrow" }).textContent().catch(() => ""),
    (t) => /Still held[\d.,]+ GRID/.test(t),
  );
  step(`job #${id} opened (${/Still held[\d.,]+ GRID/.exec(held)[0]})`);
  await page.getByRole("link", { name: "Jobs", exact: true }).click();
  await page.getByRole("link", { name: `#${id}`, exact: true }).waitFor();
  step(`job #${id} is in the jobs list`);
  await page.screenshot({ path: join(shots, "jobs.png"), fullPage: true });

  // (c) //Charlie registers in the browser with his trainer's registration.
  trainers = new Trainers(rpc);
  const charlie = await trainers.configure("charlie", "//Charlie");
  const registration = await trainers.registration(charlie);
  await page.getByRole("link", { name: "Providers", exact: true }).click();
  await page.getByRole("link", { name: "Register as a provider" }).click();
  await page.getByRole("heading", { level: 1, name: "Register a provider" }).waitFor();
  await selectAccount(page, "Charlie (dev)");
  const register = page.getByRole("form", { name: "The trainer's registration" });
  await register.getByLabel("Registration (JSON)").fill(registration);
  await register.getByRole("heading", { name: "Summary" }).waitFor();
  await register.getByRole("button", { name: "Sign and register" }).click();
  await included(register, "register");
  const peerId = JSON.parse(registration).peer_id;
  await page.getByRole("link", { name: "Providers", exact: true }).click();
  await until("Charlie's peer id is not on the providers page", () => page.locator("main").textContent(), (t) => t.includes(peerId.slice(-8)) || t.includes(JSON.parse(registration).account.slice(0, 8)));
  step(`Charlie registered from the browser (peer ${peerId.slice(0, 14)}…)`);

  // (d) a 4-round MNIST job for two providers, trained by real trainers while the page watches.
  await selectAccount(page, "Alice (dev)");
  const mnist = await postJob(page, {
    Dataset: "mnist",
    Model: "mlp",
    Rounds: "4",
    "Round length (blocks)": "5",
    "Batch size": "32",
    "Learning rate": "0.002",
    "Reward per round (GRID)": "10",
    "Min providers": "2",
    "Max providers": "2",
    // No challenge window: a job open to challenges needs at least MinVerifiableProviders (4),
    // and a stake that deters cheating against the chain's audits (thousands of GRID).
    "Challenge window (blocks)": "0",
    // Within the trainers' stake (200 GRID, e2e/trainers.mjs); the form's default is sized for
    // a job with a challenge window.
    "Min provider stake (GRID)": "100",
  });
  const job = await mnist.post();
  trainers.setJob(charlie, job.id);
  trainers.provide(charlie);
  trainers.provide(await trainers.configure("dave", "//Dave", job.id));
  step(`job #${job.id} posted; trainers for Charlie and Dave started`);
  await job.link.click();
  await page.getByRole("heading", { level: 1, name: new RegExp(`Job #${job.id}\\b`) }).waitFor();
  let seen = -1;
  const settled = await until(
    `job #${job.id}'s page never showed two rounds settled`,
    async () => {
      const n = await roundsSettled(page);
      if (n > seen) step(`job #${job.id}: ${(seen = n)} round(s) settled`);
      return n;
    },
    (n) => n >= 2,
    240_000,
  );
  step(`job #${job.id} advanced to ${settled} settled rounds with the trainers running`);
  // The loss curve: both trainers' held-out losses from their /status, at least two rounds each.
  const lossSection = page.locator("section[aria-labelledby=loss-title]");
  const legend = await until(
    "the loss curve shows no held-out loss from two trainers",
    () => lossSection.getByRole("list", { name: "Legend" }).textContent().catch(() => ""),
    (t) => (t.match(/eval loss/g) ?? []).length >= 2,
    30_000,
  );
  // Its table's rows are the rounds any series has a point for: the trainers' /status (read
  // every few seconds) and the chain's proofs each come in on their own, so wait for two.
  const lossRounds = await until(
    "the loss curve's table has fewer than 2 rounds, expected at least 2",
    () => lossSection.locator("details.chart-table tbody tr").count().catch(() => 0),
    (n) => n >= 2,
    30_000,
  );
  step(`loss curve: ${lossRounds} rounds; ${legend.match(/eval loss/g).length} trainers' eval series`);
  // Each participant's stake lock for the job, read from its provider record: the job's
  // 100 GRID minimum each, none flagged as missing or short.
  const locked = await until(
    "the job page does not show both participants' 100 GRID stake locks (200 GRID in all)",
    () => page.getByTestId("job-stake-locked").textContent().catch(() => ""),
    (t) => t === "200 GRID",
    30_000,
  );
  if ((await page.getByTestId("lock-warning").count()) > 0) {
    throw new Error("the job page flags a participant's stake lock as missing or short");
  }
  step(`job page: ${locked} of stake locked for the job by its participants`);
  await page.screenshot({ path: join(shots, "job.png"), fullPage: true });

  // (e) the providers page renders.
  await page.getByRole("link", { name: "Providers", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Providers" }).waitFor();
  await page
    .locator("table.providers, p.empty")
    .first()
    .waitFor()
    .catch(() => {
      throw new Error("the providers page shows neither its table nor its empty state");
    });
  const providers = await page.locator("table.providers tbody tr").count();
  step(`providers page rendered (${providers} provider rows)`);
  if (!(providers >= 2)) throw new Error(`the providers page lists ${providers} providers; Charlie and Dave are registered`);
  await page.screenshot({ path: join(shots, "providers.png"), fullPage: true });

  // (f) the network view: providers' health, the trainers' latencies and the feed.
  const opened = await bestNumber(page);
  await page.getByRole("link", { name: "Network", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Network" }).waitFor();
  await page
    .locator("table.health, section[aria-labelledby=health-table-title] p.empty")
    .first()
    .waitFor()
    .catch(() => {
      throw new Error("the network page shows neither its health table nor its empty state");
    });
  await page.getByRole("heading", { level: 2, name: "Recent events" }).waitFor();
  const heatmap = page.locator("table.heatmap");
  const cells = await until(
    "the latency heat-map shows no round-trip time between the trainers",
    () => heatmap.locator("td.rtt:not(.rtt-none)").count().catch(() => 0),
    (n) => n >= 2,
    30_000,
  );
  step(`latency heat-map: ${cells} measured cells`);
  // The feed starts with the blocks finalized before the page opened (the newest 50 events:
  // on a slow machine the jobs posted above may already have scrolled out, so the check is
  // on the blocks, not on which events they hold).
  if (opened === undefined) throw new Error("the header shows no best block");
  const oldest = await until(
    `the event feed shows no event from four blocks before #${opened}, when the page opened`,
    async () => {
      const text = (await page.getByRole("region", { name: "Recent events" }).textContent()) ?? "";
      const blocks = [...text.matchAll(/#([\d,]+) [A-Z][A-Za-z]+\./g)].map((m) => Number(m[1].replaceAll(",", "")));
      return blocks.length ? Math.min(...blocks) : undefined;
    },
    (b) => b !== undefined && b < opened - 4,
    30_000,
  );
  step(`event feed: events from block #${oldest} on, before the page opened at #${opened}`);
  step(`network page rendered (${(await page.locator("table.health tbody tr").count()) || "no"} provider rows)`);
  await page.screenshot({ path: join(shots, "network.png"), fullPage: true });

  const uncaught = pageErrors.filter((e) => !e.startsWith("console:"));
  if (uncaught.length) throw new Error(`uncaught errors in the page:\n  ${uncaught.join("\n  ")}`);
  step(`passed; screenshots in ${shots}`);
} catch (e) {
  failed = true;
  console.error(`\nE2E FAILED: ${e instanceof Error ? e.message : e}`);
  if (pageErrors.length) console.error(`page errors (distinct):\n  ${[...new Set(pageErrors)].slice(0, 20).join("\n  ")}`);
  if (trainers) console.error(`trainers' files and logs in ${trainers.root}:\n${trainers.logTails()}`);
} finally {
  await trainers?.stopAll();
  if (trainers && !failed) trainers.remove();
  await browser?.close().catch(() => {});
  await new Promise((r) => (server ? server.close(r) : r()));
}
process.exit(failed ? 1 : 0);
