import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { OPEN_ADMISSION } from "../lib/admission";
import { DATASETS } from "../lib/spec";
import { ALICE, BOB } from "../test/fixtures";
import { IDLE } from "../lib/tx";
import { UNIT } from "../lib/units";
import { CreateJobForm } from "./CreateJobForm";

const PEER = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";
const LIMITS = { maxRounds: 100_000, maxParticipants: 64, minRoundBlocks: 2, maxRoundBlocks: 14_400, maxChallengeWindow: 7_200, maxJobBlocks: 1_296_000, minVerifiableProviders: 4, auditRate: 10_000_000, fraudSlash: 500_000_000 };

describe("CreateJobForm", () => {
  it("summarizes the escrow with the chain's protocol fee before signing", async () => {
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={vi.fn()} tx={IDLE} />);
    expect(screen.getByTestId("escrow-total")).toHaveTextContent("151.5 GRID goes on hold");
    expect(screen.getByText(/5 rounds × \(30 GRID reward \+ 0.3 GRID protocol fee at 1%\) = 151.5 GRID/)).toBeInTheDocument();
    const reward = screen.getByLabelText("Reward per round (GRID)");
    await userEvent.clear(reward);
    await userEvent.type(reward, "10");
    expect(screen.getByTestId("escrow-total")).toHaveTextContent("50.5 GRID");
  });

  it("states the storage deposit the chain holds until the job is pruned", () => {
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} jobDeposit={UNIT} onSubmit={vi.fn()} tx={IDLE} />);
    expect(screen.getByTestId("job-deposit")).toHaveTextContent("storage deposit of 1 GRID");
  });

  it("shows validation messages on the fields and does not submit", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    const heads = screen.getByLabelText("Heads");
    await userEvent.clear(heads);
    await userEvent.type(heads, "3");
    expect(heads).toHaveAttribute("aria-invalid", "true");
    expect(heads).toHaveAccessibleDescription("must divide the width");
    const blocks = screen.getByLabelText("Round length (blocks)");
    await userEvent.clear(blocks);
    await userEvent.type(blocks, "1");
    expect(screen.getByText("at least 2 blocks")).toBeInTheDocument();
    expect(screen.getByText("2 fields need fixing.")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();
  });

  it("suggests a sparse code's outer step with it, unless the buyer chose one", async () => {
    render(<CreateJobForm onSubmit={vi.fn()} tx={IDLE} />);
    const lr = screen.getByLabelText("Outer learning rate");
    const momentum = screen.getByLabelText("Outer momentum");
    expect([lr, momentum].map((e) => (e as HTMLInputElement).value)).toEqual(["0.7", "0.5"]);
    await userEvent.selectOptions(screen.getByLabelText("Compression"), "topk");
    expect([lr, momentum].map((e) => (e as HTMLInputElement).value)).toEqual(["3", "0"]);
    await userEvent.selectOptions(screen.getByLabelText("Compression"), "int8");
    expect([lr, momentum].map((e) => (e as HTMLInputElement).value)).toEqual(["0.7", "0.5"]);
    await userEvent.clear(lr);
    await userEvent.type(lr, "1.2");
    await userEvent.selectOptions(screen.getByLabelText("Compression"), "tiles");
    expect([lr, momentum].map((e) => (e as HTMLInputElement).value)).toEqual(["1.2", "0.5"]);
  });

  it("switches model fields with the model and checks it fits the dataset", async () => {
    render(<CreateJobForm onSubmit={vi.fn()} tx={IDLE} />);
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "mnist");
    expect(screen.getByLabelText("Model")).toHaveValue("mlp");
    expect(screen.getByLabelText("Hidden width")).toBeInTheDocument();
    expect(screen.queryByLabelText("Heads")).not.toBeInTheDocument();
    expect(screen.getByLabelText("Model")).not.toHaveAttribute("aria-invalid");
    await userEvent.selectOptions(screen.getByLabelText("Model"), "gpt");
    expect(screen.getByLabelText("Model")).toHaveAccessibleDescription("MNIST needs the MLP, the CNN or the ResNet");
    await userEvent.selectOptions(screen.getByLabelText("Model"), "cnn");
    expect(screen.getByLabelText("Channels")).toBeInTheDocument();
    expect(screen.getByText(/Connect to a node to see the escrow/)).toBeInTheDocument();
  });

  it("offers the transformer with every knob, checks each on its field and submits its spec", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    await userEvent.selectOptions(screen.getByLabelText("Model"), "transformer");
    expect(screen.getByLabelText("Model")).not.toHaveAttribute("aria-invalid");
    // examples/llama-job.toml's model.
    const values = {
      Vocabulary: "256",
      "Context (tokens)": "64",
      Layers: "2",
      Width: "64",
      Heads: "4",
      "Key/value heads": "2",
      "MLP width": "172",
      Activation: "swiglu",
      Normalization: "rmsnorm",
      Positions: "rope",
    };
    for (const [label, value] of Object.entries(values)) expect(screen.getByLabelText(label), label).toHaveValue(value);
    expect(screen.getByLabelText("Tied embeddings")).toBeChecked();
    expect(screen.getByLabelText("Vocabulary")).toHaveAccessibleDescription("256: the text is read as bytes");
    expect(
      screen.getByText("Transformer 2×64, 4 heads (2 kv), MLP 172 SwiGLU, RMSNorm, RoPE, tied embeddings, vocab 256, context 64 (107.3k params)"),
    ).toBeInTheDocument();

    const kvHeads = screen.getByLabelText("Key/value heads");
    await userEvent.clear(kvHeads);
    await userEvent.type(kvHeads, "3");
    expect(kvHeads).toHaveAttribute("aria-invalid", "true");
    expect(kvHeads).toHaveAccessibleDescription("fewer than the heads: grouped-query attention must divide the heads");
    await userEvent.clear(kvHeads);
    await userEvent.type(kvHeads, "1");
    const width = screen.getByLabelText("Width");
    await userEvent.clear(width);
    await userEvent.type(width, "60");
    // The width makes the heads wrong: shown on the heads once the job is submitted.
    expect(screen.getByText("1 field needs fixing.")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();
    expect(screen.getByLabelText("Heads")).toHaveAccessibleDescription("with RoPE the head width (width ÷ heads = 15) must be even");
    await userEvent.selectOptions(screen.getByLabelText("Positions"), "learned");
    expect(screen.getByLabelText("Heads")).not.toHaveAttribute("aria-invalid");
    const vocab = screen.getByLabelText("Vocabulary");
    await userEvent.clear(vocab);
    await userEvent.type(vocab, "1000");
    expect(vocab).toHaveAccessibleDescription("256: the text is read as bytes the shipped text is bytes: the vocabulary must be 256");
    await userEvent.clear(vocab);
    await userEvent.type(vocab, "256");

    await userEvent.selectOptions(screen.getByLabelText("Activation"), "gelu");
    await userEvent.selectOptions(screen.getByLabelText("Normalization"), "layernorm");
    await userEvent.click(screen.getByLabelText("Tied embeddings"));
    expect(screen.getByLabelText("Tied embeddings")).not.toBeChecked();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(onSubmit.mock.calls[0]![0].model).toEqual({
      type: "Transformer",
      value: {
        vocab: 256,
        context: 64,
        layers: 2,
        width: 60,
        heads: 4,
        kv_heads: 1,
        mlp_width: 172,
        activation: { type: "Gelu", value: undefined },
        norm: { type: "LayerNorm", value: undefined },
        position: { type: "Learned", value: undefined },
        tied_embeddings: false,
      },
    });
  });

  it("offers the ResNet with its fields, checks each against its bounds and MNIST's shape, and submits its spec", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "mnist");
    expect(screen.queryByLabelText("Image channels")).not.toBeInTheDocument();
    await userEvent.selectOptions(screen.getByLabelText("Model"), "resnet");
    expect(screen.getByLabelText("Model")).not.toHaveAttribute("aria-invalid");
    expect(screen.queryByLabelText("Hidden width")).not.toBeInTheDocument();
    // examples/resnet-mnist-job.toml's model.
    const values = { "Image channels": "1", "Image side (pixels)": "28", Classes: "10", Width: "8", Stages: "2", "Blocks per stage": "1" };
    for (const [label, value] of Object.entries(values)) expect(screen.getByLabelText(label), label).toHaveValue(value);
    // Each described; the image shape by the shipped dataset's.
    expect(screen.getByLabelText("Image channels")).toHaveAccessibleDescription("1 for MNIST digits");
    expect(screen.getByLabelText("Image side (pixels)")).toHaveAccessibleDescription("28 for MNIST digits (28×28)");
    expect(screen.getByLabelText("Classes")).toHaveAccessibleDescription("10 for MNIST digits");
    expect(screen.getByLabelText("Width")).toHaveAccessibleDescription("channels of the stem and the first stage; each later stage doubles them");
    expect(screen.getByLabelText("Stages")).toHaveAccessibleDescription("each after the first halves the resolution");
    expect(screen.getByLabelText("Blocks per stage")).toHaveAccessibleDescription("each two 3×3 convolutions and a residual connection");
    expect(screen.getByText("ResNet 1×28×28 → 10 classes, width 8, 2 stages × 1 block (5.1k params)")).toBeInTheDocument();

    // MNIST's images are 1×28×28 in 10 classes.
    const side = screen.getByLabelText("Image side (pixels)");
    await userEvent.clear(side);
    await userEvent.type(side, "32");
    expect(side).toHaveAttribute("aria-invalid", "true");
    expect(side).toHaveAccessibleDescription("28 for MNIST digits (28×28) MNIST digits are 1×28×28 in 10 classes: the side must be 28");
    await userEvent.clear(side);
    await userEvent.type(side, "28");
    expect(side).not.toHaveAttribute("aria-invalid");
    const classes = screen.getByLabelText("Classes");
    await userEvent.clear(classes);
    await userEvent.type(classes, "1");
    expect(classes).toHaveAccessibleDescription("10 for MNIST digits must be between 2 and 16384");
    await userEvent.clear(classes);
    await userEvent.type(classes, "10");
    const stages = screen.getByLabelText("Stages");
    await userEvent.clear(stages);
    await userEvent.type(stages, "7");
    expect(stages).toHaveAccessibleDescription("each after the first halves the resolution must be between 1 and 6");
    await userEvent.clear(stages);
    await userEvent.type(stages, "3");
    const blocks = screen.getByLabelText("Blocks per stage");
    await userEvent.clear(blocks);
    await userEvent.type(blocks, "0");
    expect(blocks).toHaveAccessibleDescription("each two 3×3 convolutions and a residual connection must be between 1 and 32");
    expect(screen.getByText("1 field needs fixing.")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();
    await userEvent.clear(blocks);
    await userEvent.type(blocks, "2");
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(onSubmit.mock.calls[0]![0].model).toEqual({ type: "ResNet", value: { channels: 1, side: 28, classes: 10, width: 8, stages: 3, blocks: 2 } });
    expect(onSubmit.mock.calls[0]![0].dataset.content_hash).toBe(DATASETS.mnist.hash);
  });

  it("keeps the ResNet for the buyer's own images, of any shape, and takes the GPT for text", async () => {
    render(<CreateJobForm onSubmit={vi.fn()} tx={IDLE} />);
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "mnist");
    await userEvent.selectOptions(screen.getByLabelText("Model"), "resnet");
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "own");
    expect(screen.getByLabelText("Model")).toHaveValue("resnet");
    expect(screen.getByTestId("own-dataset-note")).toHaveTextContent(/or images of another shape or class count than the ResNet's\)/);
    expect(screen.getByLabelText("Image channels")).toHaveAccessibleDescription("colour planes: 1 grey (MNIST), 3 RGB (CIFAR-10)");
    expect(screen.getByLabelText("Image side (pixels)")).toHaveAccessibleDescription("square images: 28 for MNIST, 32 for CIFAR-10");
    expect(screen.getByLabelText("Classes")).toHaveAccessibleDescription("at least 2");
    // CIFAR-10's shape: nothing to say about it.
    for (const [label, value] of [
      ["Image channels", "3"],
      ["Image side (pixels)", "32"],
    ]) {
      await userEvent.clear(screen.getByLabelText(label!));
      await userEvent.type(screen.getByLabelText(label!), value!);
      expect(screen.getByLabelText(label!)).not.toHaveAttribute("aria-invalid");
    }
    const channels = screen.getByLabelText("Image channels");
    await userEvent.clear(channels);
    await userEvent.type(channels, "5");
    expect(channels).toHaveAccessibleDescription("colour planes: 1 grey (MNIST), 3 RGB (CIFAR-10) must be between 1 and 4");
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "shakespeare");
    expect(screen.getByLabelText("Model")).toHaveValue("gpt");
    expect(screen.queryByLabelText("Image channels")).not.toBeInTheDocument();
    await userEvent.selectOptions(screen.getByLabelText("Model"), "resnet");
    expect(screen.getByLabelText("Model")).toHaveAccessibleDescription("text needs the GPT or the transformer");
  });

  it("keeps the transformer for text and the buyer's own data, and takes the MLP for MNIST", async () => {
    render(<CreateJobForm onSubmit={vi.fn()} tx={IDLE} />);
    await userEvent.selectOptions(screen.getByLabelText("Model"), "transformer");
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "own");
    expect(screen.getByLabelText("Model")).toHaveValue("transformer");
    expect(screen.getByLabelText("Vocabulary")).toHaveAccessibleDescription("distinct tokens");
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "shakespeare");
    expect(screen.getByLabelText("Model")).toHaveValue("transformer");
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "mnist");
    expect(screen.getByLabelText("Model")).toHaveValue("mlp");
    expect(screen.queryByLabelText("Key/value heads")).not.toBeInTheDocument();
    await userEvent.selectOptions(screen.getByLabelText("Model"), "transformer");
    expect(screen.getByLabelText("Model")).toHaveAccessibleDescription("MNIST needs the MLP, the CNN or the ResNet");
  });

  it("takes the buyer's own dataset: a reference and a URI, checked on their fields", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    expect(screen.queryByLabelText("Reference (content hash)")).not.toBeInTheDocument();
    expect(screen.getByTestId("dataset-summary")).toHaveTextContent(
      `Dataset: Tiny Shakespeare (byte-level text), reference ${DATASETS.shakespeare.hash} from grid:shakespeare`,
    );
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "own");
    // The form cannot know which models read the data: the model stays, and the note says who checks.
    expect(screen.getByLabelText("Model")).toHaveValue("gpt");
    expect(screen.getByTestId("own-dataset-note")).toHaveTextContent(
      /Providers fetch the data and check it against the reference before joining, and skip the job if no holder serves it correctly or the model cannot read its format \(a token id beyond the vocabulary/,
    );
    expect(screen.queryByTestId("dataset-summary")).not.toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();
    const hash = screen.getByLabelText("Reference (content hash)");
    const uri = screen.getByLabelText("URI");
    expect(hash).toHaveAttribute("aria-invalid", "true");
    expect(hash).toHaveAccessibleDescription(/enter the reference grid-trainer data publish printed \(0x and 64 hex digits\)$/);
    expect(uri).toHaveAccessibleDescription(/enter where providers fetch the dataset: the URI grid-trainer data publish printed$/);
    expect(screen.getByText("2 fields need fixing.")).toBeInTheDocument();

    await userEvent.type(hash, "0x1234");
    expect(screen.getByText("must be 0x followed by exactly 64 hex digits (this has 4)")).toBeInTheDocument();
    await userEvent.clear(hash);
    await userEvent.type(hash, "AB".repeat(32));
    expect(hash).not.toHaveAttribute("aria-invalid");
    await userEvent.type(uri, "ipfs://holder.example/corpus.bin");
    expect(uri).toHaveAttribute("aria-invalid", "true");
    expect(
      screen.getByText("must be libp2p holder addresses (/ip4/…/p2p/<peer id>), file://…, http(s)://… or grid:<shipped name>"),
    ).toBeInTheDocument();
    await userEvent.clear(uri);
    await userEvent.type(uri, "grid:mnist");
    expect(hash).toHaveAccessibleDescription(new RegExp(`not the reference of shipped mnist: that is ${DATASETS.mnist.hash}$`));
    expect(screen.getByTestId("dataset-source")).toHaveTextContent(/^Providers cannot fetch it: not the reference of shipped mnist/);
    await userEvent.clear(uri);
    await userEvent.type(uri, "/ip4/127.0.0.1/tcp/40111");
    expect(screen.getByText("holder address /ip4/127.0.0.1/tcp/40111 has no /p2p/<peer id>")).toBeInTheDocument();
    // No preview of a URI the trainers refuse: the field says why.
    expect(screen.queryByTestId("dataset-source")).not.toBeInTheDocument();
    await userEvent.type(uri, `/p2p/${PEER}`);
    expect(uri).not.toHaveAttribute("aria-invalid");
    // A valid URI previews where the data comes from and how to see its format, files and sizes.
    const preview = screen.getByTestId("dataset-source");
    expect(preview).toHaveTextContent("Served over libp2p by 1 holder:");
    expect(screen.getByRole("list", { name: "Holders" })).toHaveTextContent(/^12D3KooW…4kx6nXTN at \/ip4\/127.0.0.1\/tcp\/40111$/);
    expect(screen.getByLabelText("Data info command")).toHaveTextContent(
      `grid-trainer data info --reference ${"0x" + "ab".repeat(32)} --uri "/ip4/127.0.0.1/tcp/40111/p2p/${PEER}"`,
    );

    // Reviewed before signing, then posted as the chain stores it.
    const ref = "0x" + "ab".repeat(32);
    const holder = `/ip4/127.0.0.1/tcp/40111/p2p/${PEER}`;
    expect(screen.getByTestId("dataset-summary")).toHaveTextContent(`Dataset: your own, reference ${ref} from ${holder}`);
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(onSubmit.mock.calls[0]![0].dataset).toEqual({ content_hash: ref, uri: Uint8Array.from(new TextEncoder().encode(holder)) });

    // Back to a shipped dataset: its fields and note go, and what was typed no longer counts.
    await userEvent.selectOptions(screen.getByLabelText("Dataset"), "mnist");
    expect(screen.queryByLabelText("URI")).not.toBeInTheDocument();
    expect(screen.queryByTestId("dataset-source")).not.toBeInTheDocument();
    expect(screen.queryByTestId("own-dataset-note")).not.toBeInTheDocument();
    expect(screen.getByTestId("dataset-summary")).toHaveTextContent(`Dataset: MNIST digits, reference ${DATASETS.mnist.hash} from grid:mnist`);
  });

  it("takes optional initial weights: explained, checked on their fields, none when empty", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    expect(screen.getByRole("group", { name: "Initial weights (fine-tuning, optional)" })).toBeInTheDocument();
    expect(screen.getByTestId("weights-note")).toHaveTextContent(
      /Grid's parameter names or a Hugging Face Llama\/GPT-2 layout with grid-trainer data publish FILE --format weights; every provider fetches it, checks it against the hash and starts from it\./,
    );
    expect(screen.getByTestId("weights-summary")).toHaveTextContent("Starts from the seeded initialisation.");
    const hash = screen.getByLabelText("Weights reference (content hash)");
    const uri = screen.getByLabelText("Weights URI");
    expect(hash).not.toHaveAttribute("aria-invalid");

    // Half typed: the other field is asked for once the job is submitted.
    await userEvent.type(hash, "0x1234");
    expect(hash).toHaveAttribute("aria-invalid", "true");
    expect(hash).toHaveAccessibleDescription(/must be 0x followed by exactly 64 hex digits \(this has 4\)$/);
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();
    expect(uri).toHaveAccessibleDescription(/enter where providers fetch the weights: the URI grid-trainer data publish printed$/);
    expect(screen.getByText("2 fields need fixing.")).toBeInTheDocument();

    await userEvent.clear(hash);
    await userEvent.type(hash, "CD".repeat(32));
    expect(hash).not.toHaveAttribute("aria-invalid");
    await userEvent.type(uri, "grid:shakespeare");
    expect(uri).toHaveAccessibleDescription(/grid: names shipped training data, not weights/);
    await userEvent.clear(uri);
    await userEvent.type(uri, "ipfs://holder.example/llama.safetensors");
    expect(uri).toHaveAccessibleDescription(/must be libp2p holder addresses/);
    expect(screen.queryByTestId("dataset-source")).not.toBeInTheDocument();
    await userEvent.clear(uri);
    await userEvent.type(uri, "file:///srv/llama.safetensors");
    expect(screen.getByTestId("dataset-source")).toHaveTextContent("Files on each provider's machine: /srv/llama.safetensors");
    await userEvent.clear(uri);
    const holder = `/ip4/127.0.0.1/tcp/40111/p2p/${PEER}`;
    await userEvent.type(uri, holder);
    expect(uri).not.toHaveAttribute("aria-invalid");

    // Reviewed before signing, then posted as the chain stores them.
    const ref = "0x" + "cd".repeat(32);
    expect(screen.getByTestId("weights-summary")).toHaveTextContent(`Starts from weights ${ref} from ${holder}`);
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(onSubmit.mock.calls[0]![0].initial_weights).toEqual({ content_hash: ref, uri: Uint8Array.from(new TextEncoder().encode(holder)) });

    // Emptied again: none.
    await userEvent.clear(hash);
    await userEvent.clear(uri);
    expect(screen.getByTestId("weights-summary")).toHaveTextContent("Starts from the seeded initialisation.");
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(2);
    expect(onSubmit.mock.calls[1]![0].initial_weights).toBeUndefined();
  });

  it("submits the converted spec", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(onSubmit.mock.calls[0]![0]).toMatchObject({ rounds: 5, reward_per_round: 30n * UNIT, min_providers: 4 });
    expect(onSubmit.mock.calls[0]![1]).toEqual(OPEN_ADMISSION);
    expect(screen.getByTestId("admission-summary")).toHaveTextContent("Who may join: anyone with the stake.");
  });

  it("asks for enough providers to verify a job with a challenge window", async () => {
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={vi.fn()} tx={IDLE} />);
    const min = screen.getByLabelText("Min providers");
    await userEvent.clear(min);
    await userEvent.type(min, "3");
    expect(min).toHaveAttribute("aria-invalid", "true");
    expect(min).toHaveAccessibleDescription("needed to start at least 4 with a challenge window (or set the window to 0)");
    await userEvent.clear(screen.getByLabelText("Challenge window (blocks)"));
    await userEvent.type(screen.getByLabelText("Challenge window (blocks)"), "0");
    expect(min).not.toHaveAttribute("aria-invalid");
  });

  it("refuses a stake too low to deter cheating against the chain's audits, naming the stake needed", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    const stake = screen.getByLabelText("Min provider stake (GRID)");
    expect(stake).toHaveAccessibleDescription("5,940 GRID or more with this reward and challenge window");
    await userEvent.clear(stake);
    await userEvent.type(stake, "100");
    expect(stake).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText(/^at least 5,940 GRID with a challenge window, or cheating pays: 1% of contributions are audited and fraud loses 50% of the stake/)).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();
    // A smaller reward needs less; no challenge window needs none.
    const reward = screen.getByLabelText("Reward per round (GRID)");
    await userEvent.clear(reward);
    await userEvent.type(reward, "0.5");
    expect(stake).not.toHaveAttribute("aria-invalid");
    expect(stake).toHaveAccessibleDescription("99 GRID or more with this reward and challenge window");
    await userEvent.clear(reward);
    await userEvent.type(reward, "30");
    expect(stake).toHaveAttribute("aria-invalid", "true");
    await userEvent.clear(screen.getByLabelText("Challenge window (blocks)"));
    await userEvent.type(screen.getByLabelText("Challenge window (blocks)"), "0");
    expect(stake).not.toHaveAttribute("aria-invalid");
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit.mock.calls[0]![0]).toMatchObject({ min_provider_stake: 100n * UNIT, challenge_window: 0 });
  });

  it("submits the admission rules and shows a bad allowlist entry on its field", async () => {
    const onSubmit = vi.fn();
    render(<CreateJobForm limits={LIMITS} protocolFee={10_000_000} onSubmit={onSubmit} tx={IDLE} />);
    await userEvent.clear(screen.getByLabelText("Minimum health score (%)"));
    await userEvent.type(screen.getByLabelText("Minimum health score (%)"), "80");
    await userEvent.clear(screen.getByLabelText("Minimum registration age (blocks)"));
    await userEvent.type(screen.getByLabelText("Minimum registration age (blocks)"), "600");
    const allowlist = screen.getByLabelText("Allowlist");
    await userEvent.type(allowlist, `${ALICE}\nnot-an-address\n`);
    expect(allowlist).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText('line 2 ("not-an-address") is not an SS58 account address')).toBeInTheDocument();
    expect(screen.getByText("1 field needs fixing.")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).not.toHaveBeenCalled();

    await userEvent.clear(allowlist);
    await userEvent.type(allowlist, `${ALICE}\n\n  ${BOB}  \n`);
    expect(allowlist).not.toHaveAttribute("aria-invalid");
    expect(screen.getByTestId("admission-summary")).toHaveTextContent(
      "Who may join: providers with the stake, a health score of at least 0.800 (80%), registered for at least 600 blocks (60 min), on the allowlist (2 accounts).",
    );
    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(onSubmit.mock.calls[0]![1]).toEqual({ min_health: 800_000_000, min_age: 600, allowlist: [ALICE, BOB] });
  });

  it("cannot sign without an account and shows the transaction", () => {
    render(
      <CreateJobForm
        onSubmit={vi.fn()}
        cannotSign="Choose an account to sign with."
        tx={{ phase: "inBlock", txHash: "0x01", block: { number: 9, hash: "0x02" } }}
        createdJob={4n}
      />,
    );
    expect(screen.getByRole("button", { name: "Sign and post job" })).toBeDisabled();
    expect(screen.getByText("Choose an account to sign with.")).toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent("Create job: In block #9");
    expect(screen.getByRole("link", { name: "job #4" })).toHaveAttribute("href", "#/jobs/4");
  });
});
