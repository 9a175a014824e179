// inspector.mjs drives the MCP Inspector's CLI mode
// (@modelcontextprotocol/inspector, `mcp-inspector --cli`) as the README
// shows it: one command per request, each its own connection, with
// --protocol-era legacy (2025-11-25) or modern (2026-07-28) and --format
// json (lib.mjs has the plan and the scenario). Over stdio each command
// starts the server command anew. It must run under the Node.js that the
// Inspector needs (>= 22.19), which it also runs the CLI with.

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { main, plan, run, timeout } from './lib.mjs';

const require = createRequire(import.meta.url);
const launcher = join(
    dirname(require.resolve('@modelcontextprotocol/inspector/package.json')),
    'clients',
    'launcher',
    'build',
    'index.js'
);

const era = plan.era === '2026-07-28' ? 'modern' : 'legacy';

// before and after are the CLI's arguments that name the server: the URL
// first, or the command last.
function before() {
    return plan.transport.http ? [plan.transport.http, '--transport', 'http'] : [];
}
function after() {
    if (plan.transport.http) return [];
    const s = plan.transport.stdio;
    const env = Object.entries(s.env ?? {}).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    return [...env, '--transport', 'stdio', '--', s.command, ...(s.args ?? [])];
}

// inspect runs one CLI command and returns its JSON result; a failed
// command is an error with its exit status and output.
function inspect(args) {
    const argv = [launcher, '--cli', ...before(), '--protocol-era', era, '--format', 'json', ...args, ...after()];
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', d => (out += d));
        child.stderr.on('data', d => {
            err += d;
            process.stderr.write(d);
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
        child.on('error', reject);
        child.on('close', (code, signal) => {
            clearTimeout(timer);
            let doc;
            try {
                doc = JSON.parse(out);
            } catch {}
            // Exit 5 is the CLI's "tool returned isError": the result is
            // on stdout all the same.
            if (doc?.result && (code === 0 || code === 5)) return resolve(doc.result);
            const e = new Error(`inspector ${args.join(' ')}: exit ${code ?? signal}\nstdout: ${out}\nstderr: ${err}`);
            reject(e);
        });
    });
}

// toolArgs are the arguments of a tools/call, as the README writes them:
// --tool-arg key=value, one per argument.
function toolArgs(req) {
    const pairs = Object.entries(req.arguments ?? {}).flatMap(([k, v]) => ['--tool-arg', `${k}=${v}`]);
    return ['--method', 'tools/call', '--tool-name', req.name, ...pairs];
}

await main(async () => {
    await run({
        async connect() {
            return {};
        },
        async tools() {
            return (await inspect(['--method', 'tools/list'])).tools.map(t => t.name);
        },
        async prompts() {
            return (await inspect(['--method', 'prompts/list'])).prompts;
        },
        async resources() {
            return (await inspect(['--method', 'resources/list'])).resources;
        },
        async resourceTemplates() {
            return (await inspect(['--method', 'resources/templates/list'])).resourceTemplates;
        },
        async call(req) {
            const r = await inspect(toolArgs(req));
            const text = (r.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');
            return { isError: r.isError === true, text };
        },
        async close() {}
    });
});
