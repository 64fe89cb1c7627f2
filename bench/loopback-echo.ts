// The child process of the recipes suite's floor row (loopback.ts): echoes every byte it reads on
// a TCP connection, and tells the parent its port.
import { createServer } from 'node:net';

const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('data', (chunk) => socket.write(chunk));
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.(typeof address === 'object' && address !== null ? address.port : 0);
});
// The parent went away: nothing left to echo for.
process.on('disconnect', () => process.exit(0));
