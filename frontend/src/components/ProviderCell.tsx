import { shortAddress } from "../lib/format";

/** A table's row header naming a provider: its shortened account, linking to its page. */
export function ProviderCell({ who }: { who: string }) {
  return (
    <th scope="row" className="mono">
      <a href={`#/providers/${who}`} title={who}>
        {shortAddress(who)}
      </a>
    </th>
  );
}
