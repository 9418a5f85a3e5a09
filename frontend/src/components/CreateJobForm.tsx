import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import { admissionText, buildAdmission, MAX_ALLOWLIST, type Admission } from "../lib/admission";
import { blocksToText } from "../lib/format";
import {
  buildJobSpec,
  checkInitialWeights,
  DATASETS,
  datasetUriProblem,
  DEFAULT_FORM,
  describeModel,
  escrowOf,
  formDataset,
  modelFits,
  neededStake,
  outerStepFor,
  parseContentHash,
  shippedDataset,
  SHIPPED_IMAGES,
  U128_MAX,
  type CompressionKind,
  type DatasetChoice,
  type DatasetText,
  type FormField,
  type JobForm,
  type JobSpec,
  type ModelKind,
  type SpecLimits,
  type TextField,
} from "../lib/spec";
import type { TxState } from "../lib/tx";
import { formatGrid, formatPerbill } from "../lib/units";
import { DatasetSource } from "./DatasetSource";
import { TxStatus } from "./TxStatus";

/** The model for a new dataset choice: the one chosen if it reads the data (the buyer's own
 * dataset keeps any), otherwise the GPT for text and the MLP for MNIST. */
function modelFor(dataset: DatasetChoice, model: ModelKind): ModelKind {
  if (dataset === "own" || modelFits(dataset, model)) return model;
  return dataset === "shakespeare" ? "gpt" : "mlp";
}

/** The inputs of a dataset reference or URI: typed as text, not corrected. */
const TEXT_INPUT = { inputMode: "text", spellCheck: false, autoCapitalize: "off", autoCorrect: "off", className: "mono" } as const;

/** The dataset the job will name, for review before signing: its reference and where it comes from. */
function DatasetSummary({ dataset }: { dataset: DatasetText }) {
  const shipped = shippedDataset(dataset);
  return (
    <p className="muted break" data-testid="dataset-summary">
      Dataset: {shipped ? DATASETS[shipped].label : "your own"}, reference <code className="mono">{dataset.hash}</code> from{" "}
      <code className="mono">{dataset.uri}</code>
    </p>
  );
}

export interface CreateJobFormProps {
  /** The chain's limits; without them only the spec's own rules are checked. */
  limits?: SpecLimits;
  /** Protocol fee (Perbill parts); the escrow summary needs it. */
  protocolFee?: number;
  /** The storage deposit held per job until its records are pruned. */
  jobDeposit?: bigint;
  /** Why signing is not possible now (no account, not connected), if so. */
  cannotSign?: string;
  onSubmit: (spec: JobSpec, admission: Admission) => void;
  tx: TxState;
  /** The id of the job the last transaction created. */
  createdJob?: bigint;
  initial?: JobForm;
}

export function CreateJobForm({ limits, protocolFee, jobDeposit, cannotSign, onSubmit, tx, createdJob, initial = DEFAULT_FORM }: CreateJobFormProps) {
  const [form, setForm] = useState<JobForm>(initial);
  const [touched, setTouched] = useState<Set<FormField>>(new Set());
  const [submitted, setSubmitted] = useState(false);
  const built = useMemo(() => buildJobSpec(form, limits), [form, limits]);
  const admission = useMemo(() => buildAdmission(form), [form]);
  const errors = { ...built.errors, ...admission.errors };
  const escrow = built.spec && protocolFee !== undefined ? escrowOf(built.spec, protocolFee) : undefined;
  const stake = neededStake(form, limits);
  const dataset = formDataset(form).dataset;
  // The image shape a shipped dataset (or one named as one's own) holds, if it holds images.
  const shipped = dataset && shippedDataset(dataset);
  const shippedImages = shipped ? SHIPPED_IMAGES[shipped] : undefined;
  const images = shipped && shippedImages ? { ...shippedImages, label: DATASETS[shipped].label } : undefined;
  const checkedWeights = checkInitialWeights(form);
  const weights = checkedWeights.weights;
  // What a typed reference is, previewed once its URI is one the trainers read.
  const ownPreview = form.dataset === "own" && !datasetUriProblem(form.datasetUri.trim());
  const weightsPreview = form.weightsUri.trim() !== "" && !checkedWeights.errors?.weightsUri;
  const busy = tx.phase === "signing" || tx.phase === "pending";

  const set = (field: FormField, value: string | boolean) => {
    setForm((f) => {
      const next = { ...f, [field]: value };
      if (field === "dataset") next.model = modelFor(value as DatasetChoice, f.model);
      // A sparse code wants its own outer step, unless the buyer chose one.
      if (field === "compression" && !touched.has("outerLr") && !touched.has("outerMomentum")) {
        Object.assign(next, outerStepFor(value as CompressionKind));
      }
      return next;
    });
    setTouched((t) => new Set(t).add(field).add(field === "dataset" ? "model" : field));
  };
  const errorOf = (field: FormField) => (submitted || touched.has(field) ? errors[field] : undefined);
  const errorNote = (name: FormField, error: string | undefined) =>
    error && (
      <small id={`${name}-error`} className="error">
        {error}
      </small>
    );

  const field = (name: TextField, label: string, hint?: ReactNode, props: React.InputHTMLAttributes<HTMLInputElement> = {}) => {
    const error = errorOf(name);
    const describedBy = [hint ? `${name}-hint` : "", error ? `${name}-error` : ""].filter(Boolean).join(" ");
    return (
      <div className={`field${error ? " invalid" : ""}`}>
        <label htmlFor={name}>{label}</label>
        <input
          id={name}
          name={name}
          inputMode="decimal"
          value={form[name]}
          onChange={(e) => set(name, e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy || undefined}
          {...props}
        />
        {hint && (
          <small id={`${name}-hint`} className="muted">
            {hint}
          </small>
        )}
        {errorNote(name, error)}
      </div>
    );
  };

  /** A reference (content hash) and the URI providers fetch it from (`what`: "it" for data,
   * "them" for weights), with where it comes from once the URI is valid. */
  const referenceFields = (hashField: TextField, uriField: TextField, labels: [string, string], what: string, preview: boolean, weights = false) => (
    <>
      <div className="fields fields-wide">
        {field(hashField, labels[0], "0x and 64 hex digits, as grid-trainer data publish prints it", TEXT_INPUT)}
        {field(
          uriField,
          labels[1],
          `where providers fetch ${what}: libp2p holders (/ip4/…/p2p/<peer id>, several separated by spaces), file:///path or http://host/file`,
          TEXT_INPUT,
        )}
      </div>
      {preview && <DatasetSource dataset={{ hash: parseContentHash(form[hashField]).hash, uri: form[uriField].trim() }} weights={weights} />}
    </>
  );
  const choice = (name: TextField, label: string, options: [string, string][]) => {
    const error = errorOf(name);
    return (
      <div className={`field${error ? " invalid" : ""}`}>
        <label htmlFor={name}>{label}</label>
        <select
          id={name}
          value={form[name]}
          onChange={(e) => set(name, e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${name}-error` : undefined}
        >
          {options.map(([value, text]) => (
            <option key={value} value={value}>
              {text}
            </option>
          ))}
        </select>
        {errorNote(name, error)}
      </div>
    );
  };

  const textArea = (name: TextField, label: string, hint: ReactNode) => {
    const error = errorOf(name);
    const describedBy = [`${name}-hint`, error ? `${name}-error` : ""].filter(Boolean).join(" ");
    return (
      <div className={`field${error ? " invalid" : ""}`}>
        <label htmlFor={name}>{label}</label>
        <textarea
          id={name}
          name={name}
          rows={4}
          spellCheck={false}
          autoCapitalize="off"
          autoCorrect="off"
          className="mono"
          value={form[name]}
          onChange={(e) => set(name, e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy}
        />
        <small id={`${name}-hint`} className="muted">
          {hint}
        </small>
        {errorNote(name, error)}
      </div>
    );
  };

  const checkbox = (name: FormField, label: string, hint: ReactNode) => {
    const error = errorOf(name);
    const describedBy = [`${name}-hint`, error ? `${name}-error` : ""].filter(Boolean).join(" ");
    return (
      <div className={`field field-check${error ? " invalid" : ""}`}>
        <label htmlFor={name}>
          <input
            id={name}
            name={name}
            type="checkbox"
            checked={form[name] === true}
            onChange={(e) => set(name, e.target.checked)}
            aria-invalid={error ? true : undefined}
            aria-describedby={describedBy}
          />{" "}
          {label}
        </label>
        <small id={`${name}-hint`} className="muted">
          {hint}
        </small>
        {errorNote(name, error)}
      </div>
    );
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSubmitted(true);
    if (built.spec && admission.admission && !cannotSign && !busy) onSubmit(built.spec, admission.admission);
  };

  const errorCount = Object.keys(errors).length;
  return (
    <form className="create-job" onSubmit={submit} noValidate aria-labelledby="create-title">
      <h1 id="create-title">Post a training job</h1>

      <fieldset>
        <legend>Data and model</legend>
        <div className="fields">
          {choice("dataset", "Dataset", [...Object.entries(DATASETS).map(([k, d]): [string, string] => [k, d.label]), ["own", "Your own dataset"]])}
        </div>
        {form.dataset === "own" && (
          <>
            {referenceFields("datasetHash", "datasetUri", ["Reference (content hash)", "URI"], "it", ownPreview)}
            <p className="muted" data-testid="own-dataset-note">
              Which models can read your dataset the form cannot tell. Providers fetch the data and check it against the
              reference before joining, and skip the job if no holder serves it correctly or the model cannot read its format
              (a token id beyond the vocabulary, say: the GPT here reads bytes, a vocabulary of 256; the transformer's is
              the one you set; or images of another shape or class count than the ResNet's).
            </p>
          </>
        )}
        <div className="fields">
          {choice("model", "Model", [
            ["gpt", "Byte-level GPT"],
            ["mlp", "MNIST MLP"],
            ["cnn", "MNIST CNN"],
            ["transformer", "Transformer (GPT-2 or Llama style)"],
            ["resnet", "ResNet (image classifier)"],
          ])}
          {form.model === "gpt" && (
            <>
              {field("gptContext", "Context (tokens)")}
              {field("gptLayers", "Layers")}
              {field("gptHeads", "Heads")}
              {field("gptWidth", "Width")}
            </>
          )}
          {form.model === "mlp" && (
            <>
              {field("mlpHidden", "Hidden width")}
              {field("mlpLayers", "Hidden layers")}
            </>
          )}
          {form.model === "cnn" && (
            <>
              {field("cnnChannels", "Channels")}
              {field("cnnHidden", "Dense width")}
            </>
          )}
          {form.model === "resnet" && (
            <>
              {field(
                "resnetChannels",
                "Image channels",
                images ? `${images.channels} for ${images.label}` : "colour planes: 1 grey (MNIST), 3 RGB (CIFAR-10)",
              )}
              {field(
                "resnetSide",
                "Image side (pixels)",
                images ? `${images.side} for ${images.label} (${images.side}×${images.side})` : "square images: 28 for MNIST, 32 for CIFAR-10",
              )}
              {field("resnetClasses", "Classes", images ? `${images.classes} for ${images.label}` : "at least 2")}
              {field("resnetWidth", "Width", "channels of the stem and the first stage; each later stage doubles them")}
              {field("resnetStages", "Stages", "each after the first halves the resolution")}
              {field("resnetBlocks", "Blocks per stage", "each two 3×3 convolutions and a residual connection")}
            </>
          )}
          {form.model === "transformer" && (
            <>
              {field("transformerVocab", "Vocabulary", form.dataset === "shakespeare" ? "256: the text is read as bytes" : "distinct tokens")}
              {field("transformerContext", "Context (tokens)")}
              {field("transformerLayers", "Layers")}
              {field("transformerWidth", "Width")}
              {field("transformerHeads", "Heads")}
              {field("transformerKvHeads", "Key/value heads", "fewer than the heads: grouped-query attention")}
              {field("transformerMlpWidth", "MLP width")}
              {choice("transformerActivation", "Activation", [
                ["swiglu", "SwiGLU"],
                ["gelu", "GELU"],
              ])}
              {choice("transformerNorm", "Normalization", [
                ["rmsnorm", "RMSNorm"],
                ["layernorm", "LayerNorm"],
              ])}
              {choice("transformerPosition", "Positions", [
                ["rope", "RoPE (rotary)"],
                ["learned", "Learned embedding"],
              ])}
              {checkbox("transformerTied", "Tied embeddings", "the output head is the token embedding")}
            </>
          )}
        </div>
        {built.spec && <p className="muted">{describeModel(built.spec.model)}</p>}
        {dataset && <DatasetSummary dataset={dataset} />}
      </fieldset>

      <fieldset>
        <legend>Initial weights (fine-tuning, optional)</legend>
        <p className="muted" data-testid="weights-note">
          Weights every provider starts from instead of a seeded initialisation: publish a <code>.safetensors</code> file in
          Grid's parameter names or a Hugging Face Llama/GPT-2 layout with{" "}
          <code className="mono">grid-trainer data publish FILE --format weights</code>; every provider fetches it, checks it
          against the hash and starts from it. Leave both fields empty to start from the seeded initialisation.
        </p>
        {referenceFields("weightsHash", "weightsUri", ["Weights reference (content hash)", "Weights URI"], "them", weightsPreview, true)}
        <p className="muted break" data-testid="weights-summary">
          {weights ? (
            <>
              Starts from weights <code className="mono">{weights.hash}</code> from <code className="mono">{weights.uri}</code>
            </>
          ) : (
            "Starts from the seeded initialisation."
          )}
        </p>
      </fieldset>

      <fieldset>
        <legend>Training</legend>
        <div className="fields">
          {field("rounds", "Rounds", limits && `at most ${limits.maxRounds}`)}
          {field(
            "roundBlocks",
            "Round length (blocks)",
            /^\d+$/.test(form.roundBlocks) ? blocksToText(Number(form.roundBlocks)) : limits && `at least ${limits.minRoundBlocks}`,
          )}
          {field("batchSize", "Batch size")}
          {choice("optimizer", "Inner optimizer", [
            ["adamw", "AdamW"],
            ["sgd", "SGD"],
          ])}
          {field("lr", "Learning rate", "above 0, at most 1")}
          {form.optimizer === "adamw" && (
            <>
              {field("warmupSteps", "Warm-up steps")}
              {field("weightDecay", "Weight decay")}
            </>
          )}
          {field("outerLr", "Outer learning rate", "above 0, at most 4")}
          {field("outerMomentum", "Outer momentum", "below 1")}
          {field("errorDecay", "Error-feedback decay", "0 to 1: the share of what earlier updates left out that each round sends again")}
          {field("annealRounds", "Outer anneal: last rounds", "empty or 0: none; else the outer learning rate falls in a straight line over the job's last rounds")}
          {field("annealToLr", "Outer anneal: last round's rate", "above 0, at most the outer learning rate (used with an anneal)")}
          {field("denseRounds", "Dense rounds", "0: none; else the first rounds send dense int8 updates and move the model to the trainers' mean")}
          {field("overlapSteps", "Overlapped steps", "0: none; else each round's first steps train while the round before is exchanged")}
          {field("maxSteps", "Most inner steps per round", "empty: as many as fit; a claim of more is refused and never replayed; set, the learning rate decays over rounds × this")}
          {field("graceMs", "Exchange: commitments taken for (ms)", "past the commit deadline; the same for every member")}
          {field("fetchMs", "Exchange: longest wait for updates (ms)", "2 × grace + fetch / 2 comes out of each round's training, at most half of it")}
          {field("fanIn", "Exchange: most updates aggregated a round", "empty: every member's; else drawn each round (at least 3), each trainer fetching about that many")}
          {choice("compression", "Compression", [
            ["none", "None (f32)"],
            ["int8", "int8"],
            ["topk", "Top-k"],
            ["tiles", "Tiles (SparseLoCo)"],
          ])}
          {(form.compression === "int8" || form.compression === "topk") && field("chunk", "Chunk (values)")}
          {form.compression === "tiles" && field("k", "Kept per 64×64 tile (k)", "1 to 4096")}
          {form.compression === "topk" && (
            <>
              {field("k", "Kept per chunk (k)")}
              {field("valueBits", "Bits per value", "1 to 8")}
            </>
          )}
        </div>
      </fieldset>

      <fieldset>
        <legend>Providers and payment</legend>
        <div className="fields">
          {field("rewardPerRound", "Reward per round (GRID)")}
          {field("minProviders", "Min providers", "needed to start")}
          {field("maxProviders", "Max providers", limits && `at most ${Math.min(limits.maxParticipants, 64)}`)}
          {field(
            "minProviderStake",
            "Min provider stake (GRID)",
            stake !== null && stake < U128_MAX ? `${formatGrid(stake)} or more with this reward and challenge window` : undefined,
          )}
          {field(
            "challengeWindow",
            "Challenge window (blocks)",
            /^\d+$/.test(form.challengeWindow) ? blocksToText(Number(form.challengeWindow)) : undefined,
          )}
        </div>
      </fieldset>

      <fieldset>
        <legend>Admission (optional)</legend>
        <p className="muted">Who may join besides holding the stake. Left as they are, anyone with the stake may.</p>
        <div className="fields">
          {field("minHealth", "Minimum health score (%)", "0 to 100: a provider's score of 0.800 is 80%")}
          {field(
            "minAge",
            "Minimum registration age (blocks)",
            /^\d+$/.test(form.minAge.trim()) && Number(form.minAge) > 0
              ? `registered at least ${blocksToText(Number(form.minAge))}`
              : "blocks a joiner must have been registered",
            { inputMode: "numeric" },
          )}
        </div>
        {textArea(
          "allowlist",
          "Allowlist",
          `One SS58 address per line, at most ${MAX_ALLOWLIST}; empty: any provider.`,
        )}
        {admission.admission && (
          <p className="muted" data-testid="admission-summary">
            Who may join: {admissionText(admission.admission)}.
          </p>
        )}
      </fieldset>

      <section className="card escrow" aria-labelledby="escrow-summary-title" aria-live="polite">
        <h2 id="escrow-summary-title">Escrow</h2>
        {escrow ? (
          <>
            <p data-testid="escrow-total">
              <strong>{formatGrid(escrow.total)}</strong> goes on hold from your account when the job is posted.
            </p>
            <p className="muted">
              {escrow.rounds} rounds × ({formatGrid(escrow.rewardPerRound)} reward + {formatGrid(escrow.feePerRound)} protocol fee
              {protocolFee !== undefined ? ` at ${formatPerbill(protocolFee)}` : ""}) = {formatGrid(escrow.total)}. Rewards go to
              the providers that deliver each round; what is not paid (missing providers, failed rounds, a cancelled job)
              comes back.
            </p>
            {jobDeposit !== undefined && (
              <p className="muted" data-testid="job-deposit">
                Plus a storage deposit of {formatGrid(jobDeposit)}, held until the job's records are pruned (its challenge
                window and a vote after it ends), then returned.
              </p>
            )}
          </>
        ) : built.spec ? (
          <p className="muted">Connect to a node to see the escrow (the protocol fee is read from the chain).</p>
        ) : null}
        {errorCount > 0 && (
          <p className="error">
            {errorCount} field{errorCount === 1 ? " needs" : "s need"} fixing.
          </p>
        )}
      </section>

      <div className="actions">
        <button type="submit" disabled={busy || !!cannotSign}>
          Sign and post job
        </button>
        {cannotSign && <span className="muted">{cannotSign}</span>}
      </div>
      <TxStatus state={tx} label="Create job" />
      {createdJob !== undefined && (
        <p>
          Created <a href={`#/jobs/${createdJob}`}>job #{createdJob.toString()}</a>.
        </p>
      )}
    </form>
  );
}
