import { connect, createServer, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startBlackHole, startTcpProxy } from '../src/index.js';
import { tcpConnect } from './helpers.js';

/** A TCP server that echoes every byte back, closed (with its connections) when the test ends. */
async function echoServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function client(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  onTestFinished(() => {
    socket.destroy();
  });
  return socket;
}

function nextData(socket: Socket, ms = 2_000): Promise<string | 'nothing'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.off('data', onData);
      resolve('nothing');
    }, ms);
    const onData = (chunk: Buffer) => {
      clearTimeout(timer);
      resolve(chunk.toString());
    };
    socket.once('data', onData);
  });
}

const closed = (socket: Socket) =>
  new Promise<void>((resolve) =>
    socket.destroyed ? resolve() : socket.once('close', () => resolve()),
  );

describe('startTcpProxy', () => {
  it('forwards both ways and counts connections', async () => {
    const proxy = await startTcpProxy(`http://127.0.0.1:${await echoServer()}`);
    onTestFinished(() => proxy.close());

    const socket = await client(proxy.port);
    socket.write('ping');

    expect(await nextData(socket)).toBe('ping');
    expect(proxy.endpoint).toBe(`http://127.0.0.1:${proxy.port}`);
    expect(proxy.connectionCount).toBe(1);
  });

  it('cutAll() closes every live connection and keeps accepting new ones', async () => {
    const proxy = await startTcpProxy(await echoServer());
    onTestFinished(() => proxy.close());
    const first = await client(proxy.port);
    const second = await client(proxy.port);
    first.write('a');
    await nextData(first);
    second.write('b');
    await nextData(second);

    proxy.cutAll();

    await Promise.all([closed(first), closed(second)]);
    expect(proxy.connectionCount).toBe(0);
    const third = await client(proxy.port);
    third.write('c');
    expect(await nextData(third)).toBe('c');
    expect(proxy.totalConnections).toBe(3);
  });

  it('pause() holds traffic with connections open; resume() delivers it', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: await echoServer() });
    onTestFinished(() => proxy.close());
    const socket = await client(proxy.port);
    socket.write('before');
    expect(await nextData(socket)).toBe('before');

    proxy.pause();
    socket.write('held');
    expect(await nextData(socket, 200)).toBe('nothing');
    expect(socket.destroyed).toBe(false);

    const reply = nextData(socket);
    proxy.resume();
    expect(await reply).toBe('held');
  });

  it('connections made while paused go through after resume()', async () => {
    const proxy = await startTcpProxy(await echoServer());
    onTestFinished(() => proxy.close());
    proxy.pause();

    const socket = await client(proxy.port);
    socket.write('late');
    expect(await nextData(socket, 200)).toBe('nothing');

    const reply = nextData(socket);
    proxy.resume();
    expect(await reply).toBe('late');
  });

  it('close() stops listening and drops connections', async () => {
    const proxy = await startTcpProxy(await echoServer());
    const socket = await client(proxy.port);

    await proxy.close();

    await closed(socket);
    await expect(tcpConnect(proxy.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

describe('startBlackHole', () => {
  it('accepts connections and never answers', async () => {
    const hole = await startBlackHole();
    onTestFinished(() => hole.close());

    const socket = await client(hole.port);
    socket.write('hello?');

    expect(await nextData(socket, 200)).toBe('nothing');
    expect(hole.connectionCount).toBe(1);
    expect(hole.endpoint).toBe(`http://127.0.0.1:${hole.port}`);
  });

  it('close() drops held connections', async () => {
    const hole = await startBlackHole();
    const socket = await client(hole.port);

    await hole.close();

    await closed(socket);
    expect(hole.connectionCount).toBe(0);
  });
});
