// What a dataset reference is, as far as the browser can tell from its URI: the browser cannot
// speak Grid's libp2p data protocol, so a buyer's own dataset's format, files and sizes come
// from the command it shows (`grid-trainer data info`).
import { shortAddress } from "../lib/format";
import { DATASETS, dataInfoCommand, datasetOrigin, modelFits, SHIPPED_IMAGES, type DatasetHolder, type DatasetName, type ModelKind } from "../lib/spec";

const MODEL_NAMES: Record<ModelKind, string> = { gpt: "the GPT", transformer: "the transformer", mlp: "the MLP", cnn: "the CNN", resnet: "the ResNet" };

/** The models that read a shipped dataset, in words: "the MLP, the CNN or the ResNet (1×28×28, 10 classes)". */
function readers(name: DatasetName): string {
  const images = SHIPPED_IMAGES[name];
  const models = (Object.keys(MODEL_NAMES) as ModelKind[])
    .filter((m) => modelFits(name, m))
    .map((m) => (m === "resnet" && images ? `${MODEL_NAMES[m]} (${images.channels}×${images.side}×${images.side}, ${images.classes} classes)` : MODEL_NAMES[m]));
  return models.length > 1 ? `${models.slice(0, -1).join(", ")} or ${models.at(-1)}` : models.join("");
}

/** A holder's address without its last `/p2p/<peer id>` (where to dial the peer); the whole address if that is all it is. */
function dialAddress({ address, peer }: DatasetHolder): string {
  const dial = address.slice(0, address.lastIndexOf(`/p2p/${peer}`));
  return dial === "" ? address : dial;
}

export interface DatasetSourceProps {
  /** The reference (when known: in the form it may not be typed yet) and the URI. */
  dataset: { hash?: string; uri: string };
  /** Initial weights, not training data: a shipped dataset is refused. */
  weights?: boolean;
}

/** Where a dataset reference comes from (a shipped dataset, libp2p holders, files on each
 * provider's machine, one file over HTTP) and, for any but a shipped one, the command that shows
 * its format, files and sizes; or why the trainers refuse its URI. */
export function DatasetSource({ dataset, weights = false }: DatasetSourceProps) {
  const origin = datasetOrigin(dataset, weights);
  if (origin.kind === "refused") {
    return (
      <div className="dataset-source" data-testid="dataset-source">
        <p className="warning">Providers cannot fetch it: {origin.problem}</p>
      </div>
    );
  }
  if (origin.kind === "shipped") {
    return (
      <div className="dataset-source" data-testid="dataset-source">
        <p>
          Shipped with every trainer: <strong>{DATASETS[origin.name].label}</strong> ({origin.name}), read by {readers(origin.name)};
          nothing to fetch.
        </p>
      </div>
    );
  }
  const command = dataset.hash === undefined ? undefined : dataInfoCommand({ hash: dataset.hash, uri: dataset.uri });
  return (
    <div className="dataset-source" data-testid="dataset-source">
      {origin.kind === "holders" && (
        <>
          <p>
            Served over libp2p by {origin.holders.length === 1 ? "1 holder" : `${origin.holders.length} holders`}:
          </p>
          <ul className="holders" aria-label="Holders">
            {origin.holders.map((h, i) => (
              <li key={i}>
                <span className="mono" title={h.peer}>
                  {shortAddress(h.peer)}
                </span>{" "}
                at{" "}
                <span className="mono break" title={h.address}>
                  {dialAddress(h)}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
      {origin.kind === "file" && (
        <p>
          Files on each provider&apos;s machine: <code className="mono break">{origin.path}</code>. A provider reads
          them only inside the directories its <code>local_datasets</code> lists, and passes the job over otherwise.
        </p>
      )}
      {origin.kind === "http" && (
        <p>
          One file over HTTP: <code className="mono break">{origin.url}</code>. Its format and size are known only once it
          is downloaded. Providers fetch it only from a public address, unless one allows its own network&apos;s
          (<code>private_http_sources</code>), and give up on it if it comes slower than their floor
          (<code>min_fetch_bytes_per_sec</code>, 1 MB/s on average after a minute, by default).
        </p>
      )}
      {origin.kind !== "http" &&
        (command === undefined ? (
          <p className="muted">Enter the reference to get the command that shows its format, files and sizes.</p>
        ) : (
          <>
            <p className="muted">
              {origin.kind === "file"
                ? "Its format, files and sizes, on a machine that holds the files at this path:"
                : "Its format, files and sizes (the holders' manifest, checked against the reference):"}
            </p>
            <pre className="command" aria-label="Data info command">
              <code>{command}</code>
            </pre>
            <button type="button" aria-label="Copy data info command" onClick={() => void navigator.clipboard?.writeText(command)}>
              Copy
            </button>
          </>
        ))}
    </div>
  );
}
