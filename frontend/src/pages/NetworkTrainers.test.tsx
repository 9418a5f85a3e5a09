import { render, screen, waitFor, within } from "@testing-library/react";
import { NEVER } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import { shortAddress } from "../lib/format";
import type { NetworkSource, TrainerSource } from "../lib/source";
import { TrainerUnreachable, type TrainerStatus } from "../lib/trainer";
import { ALICE, BOB, CHARLIE } from "../test/fixtures";
import { networkProviders, networkStatuses, PEER_OF, STRANGER } from "../test/trainers";
import { NetworkPage } from "./NetworkPage";

function sources(statuses: Record<string, TrainerStatus> = networkStatuses()) {
  const source: NetworkSource = { providers: vi.fn(async () => networkProviders()), blockEvents: () => NEVER };
  const trainers: TrainerSource = {
    status: vi.fn(async (endpoint: string) => {
      const s = statuses[endpoint];
      if (!s) throw new TrainerUnreachable(`${endpoint.replace("/health", "/status")}: Failed to fetch`);
      return s;
    }),
  };
  return { source, trainers };
}

describe("NetworkPage's trainers, with fake sources", () => {
  it("lists who answered and who not (with the reason)", async () => {
    const { source, trainers } = sources();
    render(<NetworkPage source={source} at="0xbest" trainers={trainers} />);
    expect(await screen.findByTestId("trainers-summary")).toHaveTextContent("2 of 3 trainers answered.");
    const table = screen.getByRole("table", { name: "Trainers and whether they answered" });
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows[0]).toHaveTextContent("alice");
    expect(rows[0]).toHaveTextContent("answering: job #3, round 7, 2 peers, median round trip 12 ms");
    expect(rows[2]).toHaveTextContent("unreachable: http://10.0.0.3:8090/status: Failed to fetch");
    expect(trainers.status).toHaveBeenCalledWith("http://10.0.0.1:8090/health");
    expect(screen.queryByTestId("trainers-empty")).not.toBeInTheDocument();
  });

  it("draws the latency heat-map: a row per trainer, a column per peer, coloured by round trip", async () => {
    const { source, trainers } = sources();
    render(<NetworkPage source={source} at="0xbest" trainers={trainers} />);
    const table = await screen.findByRole("table", { name: /Round-trip time each trainer reports to each peer: 2 trainers/ });
    const [head, ...body] = within(table).getAllByRole("row");
    expect(within(head!).getAllByRole("columnheader").map((h) => h.textContent)).toEqual([
      "Trainer ↓ / peer →",
      shortAddress(ALICE),
      shortAddress(BOB),
      "12D3Ko…XXXXXX",
    ]);
    expect(within(head!).getByRole("link", { name: shortAddress(BOB) })).toHaveAttribute("href", `#/providers/${BOB}`);
    expect(body.map((r) => within(r).getByRole("rowheader").textContent)).toEqual([shortAddress(ALICE), shortAddress(BOB)]);
    const ab = screen.getByTestId(`rtt-${ALICE}-${PEER_OF[BOB]}`);
    expect(ab).toHaveTextContent("12 ms");
    expect(ab).toHaveClass("rtt-1");
    expect(ab).toHaveAttribute(
      "title",
      `${shortAddress(ALICE)} → ${shortAddress(BOB)}: round trip 12 ms, throughput 80 Mbit/s, peer score 0.90`,
    );
    expect(screen.getByTestId(`rtt-${ALICE}-${STRANGER}`)).toHaveClass("rtt-4");
    const none = screen.getByTestId(`rtt-${BOB}-${STRANGER}`);
    expect(none).toHaveClass("rtt-none");
    expect(none).toHaveTextContent("not reported");
    expect(screen.getByRole("list", { name: "Round-trip time colours" })).toHaveTextContent("≥ 250 ms");
  });

  it("draws the topology with a text equivalent", async () => {
    const { source, trainers } = sources();
    render(<NetworkPage source={source} at="0xbest" trainers={trainers} />);
    const graph = await screen.findByRole("img", { name: "Peer graph of the trainers" });
    expect(graph).toHaveAccessibleDescription("4 nodes and 2 links; the list below the picture gives each link.");
    const nodes = within(graph as unknown as HTMLElement).getAllByTestId("node");
    expect(nodes.map((n) => [n.querySelector("text")?.textContent, n.dataset.state])).toEqual([
      [shortAddress(ALICE), "good"],
      [shortAddress(BOB), "fair"],
      [shortAddress(CHARLIE), "unreachable"],
      ["12D3Ko…XXXXXX", "unknown"],
    ]);
    expect(nodes[2]!.querySelector("title")).toHaveTextContent(
      `${CHARLIE} (${PEER_OF[CHARLIE]}): trainer unreachable, chain health score 0.300 — http://10.0.0.3:8090/status: Failed to fetch`,
    );
    const edges = within(graph as unknown as HTMLElement).getAllByTestId("edge");
    expect(edges).toHaveLength(2);
    // The Alice–Bob link (100 Mbit/s on average) is the thickest; the stranger's has no throughput.
    expect(edges[0]).toHaveAttribute("stroke-width", "7");
    expect(edges[1]).toHaveAttribute("stroke-width", "1");
    expect(edges[1]).toHaveClass("edge-unmeasured");
    const links = screen.getByRole("list", { name: "Links" });
    expect(within(links).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      `${shortAddress(ALICE < BOB ? ALICE : BOB)} — ${shortAddress(ALICE < BOB ? BOB : ALICE)}: round trip 13 ms, throughput 100 Mbit/s (both report)`,
      expect.stringMatching(/: round trip 300 ms, throughput —$/),
    ]);
  });

  it("says trainers must be reachable from the browser when none answers", async () => {
    const { source, trainers } = sources({});
    render(<NetworkPage source={source} at="0xbest" trainers={trainers} />);
    expect(await screen.findByTestId("trainers-summary")).toHaveTextContent("0 of 3 trainers answered.");
    expect(screen.getByTestId("trainers-empty")).toHaveTextContent(
      "Trainers' status endpoints are read from the browser, so they must be reachable from it",
    );
    expect(screen.queryByRole("img")).not.toBeInTheDocument();
    expect(screen.queryByRole("table", { name: /Round-trip time/ })).not.toBeInTheDocument();
    // The rest of the page still works.
    expect(screen.getByRole("table", { name: "3 providers, by health score" })).toBeInTheDocument();
  });

  it("polls the trainers again", async () => {
    const { source, trainers } = sources();
    render(<NetworkPage source={source} at="0xbest" trainers={trainers} pollMs={30} />);
    await screen.findByTestId("trainers-summary");
    await waitFor(() => expect(vi.mocked(trainers.status).mock.calls.length).toBeGreaterThanOrEqual(6));
  });
});
