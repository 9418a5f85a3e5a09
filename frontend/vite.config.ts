import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [react()],
  build: { target: "es2022", chunkSizeWarningLimit: 1500 },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test/setup.ts"],
    include: ["src/**/*.test.{ts,tsx}", "tests/**/*.test.{ts,tsx}"],
    // The tests run beside the chain's and trainers' test lanes on two cores, where typing
    // a URI into the job form took over vitest's default 5 s: the test failed, and the
    // keystrokes it left queued landed in the next tests' fields. They wait for what they
    // assert; a limit is only there to stop a hung test.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
