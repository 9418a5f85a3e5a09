// Against a real node (skipped unless GRID_RPC is set): the chain layer the UI uses reads the
// chain, a job posted as //Alice with the form's default spec (and admission rules from the
// form's fields) is created and listed with the escrow the form announced and those rules, and a
// cancel by someone else fails with the decoded error.
//   GRID_RPC=ws://127.0.0.1:9944 npm run test:node
// (It runs in jsdom like the app tests, whose WebSocket works on Node 20 too.)
import { firstValueFrom, filter } from "rxjs";
import { afterAll, describe, expect, it } from "vitest";
import { devAccounts } from "../src/lib/accounts";
import { buildAdmission } from "../src/lib/admission";
import { chainInfo, connect, isDevChain, jobConstants, type Connection } from "../src/lib/chain";
import { loadJobDetail, loadJobs } from "../src/lib/jobs";
import { buildJobSpec, DEFAULT_FORM, escrowOf } from "../src/lib/spec";
import { createdJobId, IDLE, nextTxState, type TxState } from "../src/lib/tx";

const rpc = process.env.GRID_RPC;

describe.skipIf(!rpc)("against a dev node", () => {
  let conn: Connection;
  afterAll(() => conn?.disconnect());

  it("creates a job as //Alice, lists it, and refuses Bob's cancel", { timeout: 120_000 }, async () => {
    const states: string[] = [];
    conn = connect(rpc!, (s) => states.push(s));
    const info = await chainInfo(conn.client);
    expect(isDevChain(info)).toBe(true);
    const { limits, protocolFee } = await jobConstants(conn.api);
    expect(protocolFee).toBe(10_000_000); // 1%
    const built = buildJobSpec(DEFAULT_FORM, limits);
    expect(built.errors).toBeUndefined();
    const spec = built.spec!;
    const alice = devAccounts(info.ss58Format)[0]!;
    const bob = devAccounts(info.ss58Format)[1]!;
    // Admission rules from the form's fields: they come back from the `job` view function.
    const { admission } = buildAdmission({ minHealth: "50", minAge: "10", allowlist: `${bob.address}\n` });
    expect(admission).toEqual({ min_health: 500_000_000, min_age: 10, allowlist: [bob.address] });
    const escrowHeld = async (at: string) =>
      (await conn.api.query.Balances.Holds.getValue(alice.address, { at }))
        .filter((h) => h.id.type === "Jobs" && h.id.value.type === "JobEscrow")
        .reduce((sum, h) => sum + h.amount, 0n);
    const before = await escrowHeld("best");

    let state: TxState = IDLE;
    const seen: string[] = [];
    const inBlock = await firstValueFrom(
      conn.api.tx.Jobs.create_job({ spec, admission: admission! }).signSubmitAndWatch(alice.signer).pipe(
        filter((ev) => {
          state = nextTxState(state, ev);
          seen.push(state.phase);
          return ev.type === "txBestBlocksState" && ev.found;
        }),
      ),
    );
    expect(state.phase).toBe("inBlock");
    if (inBlock.type !== "txBestBlocksState" || !inBlock.found) throw new Error("not found");
    const id = createdJobId(inBlock.events);
    expect(id).toBeDefined();

    const jobs = await loadJobs(conn.api, inBlock.block.hash);
    const row = jobs.find((j) => j.id === id)!;
    expect(row.status).toBe("Open");
    expect(row.buyer).toBe(alice.address);
    expect(row.funded).toBe(escrowOf(spec, protocolFee).total);
    expect(row.spec).toEqual(spec);
    expect(row.admission).toEqual(admission);
    const detail = await loadJobDetail(conn.api, id!, inBlock.block.hash);
    expect(detail?.participants).toEqual([]);
    expect((await escrowHeld(inBlock.block.hash)) - before).toBe(row.funded);

    // Bob may not cancel Alice's job: the dispatch error comes back decoded.
    let refused: TxState = IDLE;
    await firstValueFrom(
      conn.api.tx.Jobs.cancel_job({ job: id! }).signSubmitAndWatch(bob.signer).pipe(
        filter((ev) => {
          refused = nextTxState(refused, ev);
          return ev.type === "txBestBlocksState" && ev.found;
        }),
      ),
    );
    expect(refused).toMatchObject({ phase: "failed", error: "Jobs.NotBuyer: only the job's buyer may do that" });
    console.log(`job ${id} created in block #${inBlock.block.number}; tx states ${seen.join(" → ")}; escrow ${row.funded}`);
  });
});
