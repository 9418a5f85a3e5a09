import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DATASETS } from "../lib/spec";
import { DatasetSource } from "./DatasetSource";

const PEER = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";
const OTHER = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo";
const REF = "0x" + "ab".repeat(32);

describe("DatasetSource", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("names a shipped dataset, what it is and which models read it, with nothing to fetch and no command", () => {
    render(<DatasetSource dataset={{ hash: DATASETS.shakespeare.hash, uri: "grid:shakespeare" }} />);
    const source = screen.getByTestId("dataset-source");
    expect(source).toHaveTextContent(
      "Shipped with every trainer: Tiny Shakespeare (byte-level text) (shakespeare), read by the GPT or the transformer; nothing to fetch.",
    );
    expect(screen.queryByLabelText("Data info command")).not.toBeInTheDocument();
  });

  it("names the models that read shipped MNIST, the ResNet with the image shape it must have", () => {
    render(<DatasetSource dataset={{ hash: DATASETS.mnist.hash, uri: "grid:mnist" }} />);
    expect(screen.getByTestId("dataset-source")).toHaveTextContent(
      "Shipped with every trainer: MNIST digits (mnist), read by the MLP, the CNN or the ResNet (1×28×28, 10 classes); nothing to fetch.",
    );
  });

  it("lists libp2p holders: each peer id shortened with the whole one as title, where to dial it, and the data info command", async () => {
    const uri = `/ip4/127.0.0.1/tcp/40111/p2p/${PEER} /dns4/holder.example/tcp/4001/p2p/${OTHER}`;
    const writeText = vi.fn(() => Promise.resolve());
    vi.stubGlobal("navigator", { ...navigator, clipboard: { writeText } });
    render(<DatasetSource dataset={{ hash: REF, uri }} />);
    const source = screen.getByTestId("dataset-source");
    expect(source).toHaveTextContent("Served over libp2p by 2 holders:");
    const holders = within(screen.getByRole("list", { name: "Holders" })).getAllByRole("listitem");
    expect(holders.map((h) => h.textContent)).toEqual([
      "12D3KooW…4kx6nXTN at /ip4/127.0.0.1/tcp/40111",
      "12D3KooW…kSCVe2Xo at /dns4/holder.example/tcp/4001",
    ]);
    expect(within(holders[0]!).getByTitle(PEER)).toHaveTextContent("12D3KooW…4kx6nXTN");
    expect(within(holders[0]!).getByTitle(`/ip4/127.0.0.1/tcp/40111/p2p/${PEER}`)).toBeInTheDocument();
    const command = `grid-trainer data info --reference ${REF} --uri "${uri}"`;
    expect(screen.getByLabelText("Data info command")).toHaveTextContent(command);
    await userEvent.click(screen.getByRole("button", { name: "Copy data info command" }));
    expect(writeText).toHaveBeenCalledWith(command);
  });

  it("says one holder in the singular", () => {
    render(<DatasetSource dataset={{ hash: REF, uri: `/ip4/10.0.0.1/tcp/1/p2p/${PEER}` }} />);
    expect(screen.getByTestId("dataset-source")).toHaveTextContent("Served over libp2p by 1 holder:");
  });

  it("says file:// names files on each provider's machine, with the command to run where they are", () => {
    render(<DatasetSource dataset={{ hash: REF, uri: "file:///srv/data/corpus.txt" }} />);
    const source = screen.getByTestId("dataset-source");
    expect(source).toHaveTextContent("Files on each provider's machine: /srv/data/corpus.txt");
    expect(source).toHaveTextContent("only inside the directories its local_datasets lists");
    expect(source).toHaveTextContent("on a machine that holds the files at this path");
    expect(screen.getByLabelText("Data info command")).toHaveTextContent(
      `grid-trainer data info --reference ${REF} --uri "file:///srv/data/corpus.txt"`,
    );
  });

  it("shows an http:// URL, whose format and size only its download tells (data info cannot)", () => {
    render(<DatasetSource dataset={{ hash: REF, uri: "http://holder.example:8080/corpus.bin" }} />);
    const source = screen.getByTestId("dataset-source");
    expect(source).toHaveTextContent("One file over HTTP: http://holder.example:8080/corpus.bin. Its format and size are known only once it is downloaded.");
    expect(source).toHaveTextContent("Providers fetch it only from a public address, unless one allows its own network's (private_http_sources), and give up on it if it comes slower than their floor (min_fetch_bytes_per_sec, 1 MB/s on average after a minute, by default).");
    expect(screen.queryByLabelText("Data info command")).not.toBeInTheDocument();
  });

  it("quotes what the shell would read in the URI", () => {
    render(<DatasetSource dataset={{ hash: REF, uri: 'file:///srv/a "b" $HOME`x`\\' }} />);
    expect(screen.getByLabelText("Data info command")).toHaveTextContent(
      `grid-trainer data info --reference ${REF} --uri "file:///srv/a \\"b\\" \\$HOME\\\`x\\\`\\\\"`,
    );
  });

  it("asks for the reference before giving the command", () => {
    render(<DatasetSource dataset={{ uri: "file:///srv/d" }} />);
    expect(screen.getByTestId("dataset-source")).toHaveTextContent("Enter the reference to get the command that shows its format, files and sizes.");
    expect(screen.queryByLabelText("Data info command")).not.toBeInTheDocument();
  });

  it("shows the form's validation message for a URI the trainers refuse, and nothing else", () => {
    const { rerender } = render(<DatasetSource dataset={{ hash: REF, uri: "/ip4/127.0.0.1/tcp/40111" }} />);
    const source = () => screen.getByTestId("dataset-source");
    expect(source()).toHaveTextContent(/^Providers cannot fetch it: holder address \/ip4\/127.0.0.1\/tcp\/40111 has no \/p2p\/<peer id>$/);
    expect(screen.queryByRole("list", { name: "Holders" })).not.toBeInTheDocument();
    expect(screen.queryByLabelText("Data info command")).not.toBeInTheDocument();
    rerender(<DatasetSource dataset={{ hash: REF, uri: "ipfs://holder.example/corpus.bin" }} />);
    expect(source()).toHaveTextContent(/Providers cannot fetch it: must be libp2p holder addresses/);
    rerender(<DatasetSource dataset={{ hash: REF, uri: "https://holder.example/corpus.bin" }} />);
    expect(source()).toHaveTextContent("One file over HTTP: https://holder.example/corpus.bin.");
    rerender(<DatasetSource dataset={{ hash: REF, uri: "grid:cifar" }} />);
    expect(source()).toHaveTextContent('Providers cannot fetch it: no shipped dataset is called "cifar" (shipped: shakespeare, mnist)');
  });

  it("refuses a shipped URI under another reference, and a shipped dataset as weights", () => {
    const { rerender } = render(<DatasetSource dataset={{ hash: REF, uri: "grid:mnist" }} />);
    const source = () => screen.getByTestId("dataset-source");
    expect(source()).toHaveTextContent(`Providers cannot fetch it: not the reference of shipped mnist: that is ${DATASETS.mnist.hash}`);
    rerender(<DatasetSource dataset={{ hash: DATASETS.mnist.hash, uri: "grid:mnist" }} weights />);
    expect(source()).toHaveTextContent(/^Providers cannot fetch it: grid: names shipped training data, not weights/);
    rerender(<DatasetSource dataset={{ hash: DATASETS.mnist.hash, uri: "grid:mnist" }} />);
    expect(source()).toHaveTextContent("MNIST digits (mnist), read by the MLP, the CNN or the ResNet (1×28×28, 10 classes)");
  });
});
