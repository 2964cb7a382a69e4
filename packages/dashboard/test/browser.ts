import { chromium, type Browser } from "playwright-core";

/** Debian's Chromium, driven headless: browser downloads are not reachable, so nothing else is used. */
const CHROMIUM = process.env.SQLINBOX_CHROMIUM ?? "/usr/bin/chromium";

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}
