// Drives code-server (VS Code in a browser) through headless Chromium for
// scripts/try-vscode.sh: opens the folder holding the dev banner's
// .vscode/mcp.json, runs "MCP: List Servers" → ticketd → Start Server,
// answers the ticketd-token password prompt, and prints the "MCP: ticketd"
// output channel. With "good" it exits 0 only once the channel says
// "Discovered N tools"; with "bad" (a wrong token) it cancels VS Code's OAuth
// offers and exits 0 only once the server shows "Error 401".
//
//   node try-vscode.mjs <playwright-core dir> <chromium> <workbench URL> <token> good|bad <shots dir>
import { createRequire } from 'node:module';

const [, , pwDir, chromiumPath, url, token, mode, shots] = process.argv;
if (!shots || !['good', 'bad'].includes(mode)) {
  console.error('usage: node try-vscode.mjs <playwright-core dir> <chromium> <url> <token> good|bad <shots dir>');
  process.exit(2);
}
const { chromium } = createRequire(import.meta.url)(pwDir);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const shot = async (name) => {
  const path = `${shots}/${mode}-${name}.png`;
  await page.screenshot({ path });
  console.log('screenshot', path);
};
const rows = () =>
  page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.getAttribute('aria-label') || e.textContent.trim()));
const pick = async (re) => {
  const r = await rows();
  const i = r.findIndex((x) => re.test(x));
  if (i < 0) throw new Error(`no ${re} among ${JSON.stringify(r)}`);
  await page.locator('.quick-input-list .monaco-list-row').nth(i).click();
  await sleep(1500);
};
const command = async (name) => {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
  await page.keyboard.type(name);
  await sleep(1200);
  await page.keyboard.press('Enter');
  await sleep(1500);
};
const visible = async (sel) => {
  const l = page.locator(sel).first();
  return (await l.count()) > 0 && (await l.isVisible());
};

let ok = false;
try {
  await page.goto(url);
  await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
  await sleep(5000);
  await command('MCP: List Servers');
  console.log('servers:', JSON.stringify(await rows()));
  await pick(/^ticketd/);
  await pick(/Start Server/);
  await sleep(1500);
  const prompt = page.locator('.quick-input-widget');
  console.log('prompt:', JSON.stringify(await prompt.innerText()),
    'input type:', await page.locator('.quick-input-widget input').getAttribute('type'));
  await shot('1-token-prompt');
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
  await sleep(8000);
  if (mode === 'bad') {
    // VS Code follows the 401's resource_metadata towards OAuth: cancel its
    // dialogs and its client-ID prompt until it gives up.
    for (let i = 0; i < 8; i++) {
      if (await visible('.monaco-dialog-box')) {
        console.log('dialog:', JSON.stringify(await page.locator('.monaco-dialog-box').first().innerText()));
        await shot(`2-dialog-${i}`);
        await page.locator('.monaco-dialog-box .monaco-button', { hasText: /^Cancel$/ }).first().click();
      } else if (await visible('.quick-input-widget')) {
        console.log('prompt:', JSON.stringify(await page.locator('.quick-input-widget').first().innerText()));
        await page.keyboard.press('Escape');
      }
      await sleep(4000);
    }
  }
  await command('MCP: List Servers');
  const state = await rows();
  console.log('servers:', JSON.stringify(state));
  await shot('3-servers');
  await pick(/^ticketd/);
  await pick(/Show Output/);
  await sleep(1000);
  await page.locator('.part.panel .action-label[aria-label*="Maximize"]').first().click().catch(() => {});
  await sleep(1500);
  await shot('4-output');
  const out = await page.$$eval('.part.panel .view-lines .view-line', (ls) =>
    ls.map((l) => [parseFloat(l.style.top), l.textContent]).sort((a, b) => a[0] - b[0]).map((x) => x[1]).join('\n').replace(/\u00a0/g, ' '));
  // (Monaco renders spaces as no-break spaces.)
  console.log('--- MCP: ticketd output ---\n' + out + '\n---');
  const line = state.find((x) => /^ticketd/.test(x)) || '';
  ok = mode === 'good'
    ? /Running/.test(line) && /Discovered \d+ tools/.test(out)
    : /Error 401/.test(line);
} catch (e) {
  console.error('try-vscode:', e.message);
  await shot('error').catch(() => {});
}
await browser.close();
console.log(mode, ok ? 'PASS' : 'FAIL');
process.exit(ok ? 0 : 1);
