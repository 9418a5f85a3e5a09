import { useEffect, useState } from "react";
import { CreateJobForm } from "../components/CreateJobForm";
import { useTx } from "../hooks/useTx";
import type { Account } from "../lib/accounts";
import type { JobConstants } from "../lib/chain";
import type { GridSource } from "../lib/source";
import { createdJobId } from "../lib/tx";

/** The create-job form, with the chain's limits and fee, signed by the selected account. */
export function CreatePage({ source, account, connected }: { source?: GridSource; account?: Account; connected: boolean }) {
  const [constants, setConstants] = useState<JobConstants>();
  const tx = useTx();
  useEffect(() => {
    if (!source) return;
    let live = true;
    source.constants().then(
      (c) => live && setConstants(c),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [source]);
  const cannotSign = !connected ? "Not connected to a node." : !account ? "Choose an account to sign with." : undefined;
  return (
    <CreateJobForm
      limits={constants?.limits}
      protocolFee={constants?.protocolFee}
      jobDeposit={constants?.jobDeposit}
      cannotSign={cannotSign}
      tx={tx.state}
      createdJob={createdJobId(tx.events)}
      onSubmit={(spec, admission) => source && account && tx.run(source.createJob(spec, admission, account.signer))}
    />
  );
}
