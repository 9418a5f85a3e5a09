// End-to-end test of the built UI in a real browser: Debian's Chromium (/usr/bin/chromium),
// driven headless by playwright-core (which downloads no browser), against a running grid-node.
//   npm run build && GRID_RPC=ws://127.0.0.1:9944 npm run test:e2e
// Serves dist/ with a tiny static server on a free port, then checks that
//   (a) the header shows the chain connected and a best block number that increases;
//   (b) as //Alice (picked in the account selector) the form's default job is posted, its
//       transaction reaches "In block" (or "Finalized"), and the job's page opens;
//   (c) the providers page renders (its table, or its empty state);
//   (d) the network page renders (its health table or empty state, and the event feed).
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

let server;
let browser;
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
  await page.getByRole("link", { name: "Post a job" }).click();
  const form = page.getByRole("form", { name: "Post a training job" });
  await form.waitFor();
  const account = page.getByLabel("Account");
  const alice = await until(
    "the account picker offers no Alice (dev) account",
    () => account.locator("option").evaluateAll((os) => os.find((o) => o.textContent.startsWith("Alice (dev)"))?.value),
    (v) => !!v,
  );
  await account.selectOption(alice);
  await until("Alice (dev) is not selected", () => account.evaluate((s) => s.selectedOptions[0]?.textContent ?? ""), (t) => t.startsWith("Alice (dev)"));
  const escrow = await until(
    "the escrow summary never showed a GRID total",
    () => page.getByTestId("escrow-total").textContent().catch(() => ""),
    (t) => /GRID/.test(t),
  );
  step(`Alice selected; escrow ${/[\d.,]+ GRID/.exec(escrow)[0]}`);
  await page.screenshot({ path: join(shots, "create.png"), fullPage: true });

  await form.getByRole("button", { name: "Sign and post job" }).click();
  const status = form.getByRole("status");
  const reached = await until(
    'the create_job transaction never reached "In block"',
    () => status.textContent(),
    (t) => /In block #\d+|Finalized/.test(t) || /fail|error/i.test(t),
    60_000,
  );
  if (!/In block #\d+|Finalized/.test(reached)) throw new Error(`the create_job transaction failed: ${reached}`);
  step(`create_job: ${/In block #\d+|Finalized #?\d*/.exec(reached)[0]}`);
  const link = form.getByRole("link", { name: /^job #\d+$/ });
  await link.waitFor();
  const id = (await link.textContent()).replace("job #", "");
  await link.click();
  await page.getByRole("heading", { level: 1, name: new RegExp(`Job #${id}\\b`) }).waitFor();
  const held = await until(
    `job #${id}'s page shows no escrow held`,
    () => page.getByRole("region", { name: "Escrow" }).textContent().catch(() => ""),
    (t) => /Still held[\d.,]+ GRID/.test(t),
  );
  step(`job #${id} opened (${/Still held[\d.,]+ GRID/.exec(held)[0]})`);
  await page.screenshot({ path: join(shots, "job.png"), fullPage: true });

  await page.getByRole("link", { name: "Jobs", exact: true }).click();
  await page.getByRole("link", { name: `#${id}`, exact: true }).waitFor();
  step(`job #${id} is in the jobs list`);
  await page.screenshot({ path: join(shots, "jobs.png"), fullPage: true });

  // (c) the providers page renders.
  await page.getByRole("link", { name: "Providers", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Providers" }).waitFor();
  await page
    .locator("table.providers, p.empty")
    .first()
    .waitFor()
    .catch(() => {
      throw new Error("the providers page shows neither its table nor its empty state");
    });
  const providers = (await page.locator("table.providers tbody tr").count()) || "no";
  step(`providers page rendered (${providers} provider rows)`);
  await page.screenshot({ path: join(shots, "providers.png"), fullPage: true });

  // (d) the network view renders: providers' health (its table, or its empty state) and the feed.
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
  step(`network page rendered (${(await page.locator("table.health tbody tr").count()) || "no"} provider rows)`);
  await page.screenshot({ path: join(shots, "network.png"), fullPage: true });

  const uncaught = pageErrors.filter((e) => !e.startsWith("console:"));
  if (uncaught.length) throw new Error(`uncaught errors in the page:\n  ${uncaught.join("\n  ")}`);
  step(`passed; screenshots in ${shots}`);
} catch (e) {
  failed = true;
  console.error(`\nE2E FAILED: ${e instanceof Error ? e.message : e}`);
  if (pageErrors.length) console.error(`page errors (distinct):\n  ${[...new Set(pageErrors)].slice(0, 20).join("\n  ")}`);
} finally {
  await browser?.close().catch(() => {});
  await new Promise((r) => (server ? server.close(r) : r()));
}
process.exit(failed ? 1 : 0);
