// Returns 1 once the node has imported and finalized the block the reference node (`args[0]`)
// had finalized when the check began: a restarted node has caught up with the network.
async function run(nodeName, networkInfo, args) {
	const reference = networkInfo.nodesByName[args[0]];
	if (!reference) throw new Error(`unknown reference node ${args[0]}`);
	const ref = await zombie.connect(reference.wsUri);
	const target = (await ref.rpc.chain.getHeader(await ref.rpc.chain.getFinalizedHead())).number.toNumber();
	await ref.disconnect();
	// The restarted node may still be opening its RPC port.
	let api;
	for (;;) {
		try {
			api = await zombie.connect(networkInfo.nodesByName[nodeName].wsUri);
			break;
		} catch (e) {
			await new Promise((resolve) => setTimeout(resolve, 1000));
		}
	}
	try {
		for (;;) {
			const best = (await api.rpc.chain.getHeader()).number.toNumber();
			const finalized = (await api.rpc.chain.getHeader(await api.rpc.chain.getFinalizedHead())).number.toNumber();
			if (best >= target && finalized >= target) {
				console.log(`${nodeName}: best #${best}, finalized #${finalized} (target #${target})`);
				return 1;
			}
			await new Promise((resolve) => setTimeout(resolve, 1000));
		}
	} finally {
		await api.disconnect();
	}
}

module.exports = { run };
