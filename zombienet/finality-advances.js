// Returns 1 once the node's finalized head has advanced by `args[0]` blocks; the test's
// `within` bounds the wait. `zombie` is the global zombienet gives scripts (@polkadot/api).
async function run(nodeName, networkInfo, args) {
	const want = Number(args[0]);
	if (!Number.isInteger(want) || want < 1) throw new Error(`bad block count ${args[0]}`);
	const api = await zombie.connect(networkInfo.nodesByName[nodeName].wsUri);
	try {
		const finalized = async () =>
			(await api.rpc.chain.getHeader(await api.rpc.chain.getFinalizedHead())).number.toNumber();
		const start = await finalized();
		for (;;) {
			const now = await finalized();
			if (now >= start + want) {
				console.log(`${nodeName}: finalized #${start} -> #${now}`);
				return 1;
			}
			await new Promise((resolve) => setTimeout(resolve, 1000));
		}
	} finally {
		await api.disconnect();
	}
}

module.exports = { run };
