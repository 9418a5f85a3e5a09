import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { Header } from "./Header";

describe("Header", () => {
  it("shows the connection, chain and live block numbers", () => {
    const { rerender } = render(<Header url="ws://127.0.0.1:9944" onConnect={vi.fn()} state="connected" chainName="Development" best={41} finalized={39} />);
    expect(screen.getByText("Connected")).toBeInTheDocument();
    expect(screen.getByText("Development")).toBeInTheDocument();
    expect(screen.getByTestId("best")).toHaveTextContent("#41");
    rerender(<Header url="ws://127.0.0.1:9944" onConnect={vi.fn()} state="connected" chainName="Development" best={1042} finalized={1040} />);
    expect(screen.getByTestId("best")).toHaveTextContent("#1,042");
    expect(screen.getByTestId("finalized")).toHaveTextContent("#1,040");
  });

  it("connects to another node URL, refusing what is not ws(s)://", async () => {
    const onConnect = vi.fn();
    render(<Header url="ws://127.0.0.1:9944" onConnect={onConnect} state="error" />);
    expect(screen.getByText("Connection error")).toBeInTheDocument();
    const input = screen.getByLabelText("Node");
    await userEvent.clear(input);
    await userEvent.type(input, "http://nope");
    expect(screen.getByRole("button", { name: "Connect" })).toBeDisabled();
    await userEvent.clear(input);
    await userEvent.type(input, "wss://grid.example:443{Enter}");
    expect(onConnect).toHaveBeenCalledWith("wss://grid.example:443");
  });
});
