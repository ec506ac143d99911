import { createSocket } from 'node:dgram';
import { afterAll } from 'vitest';

/**
 * A fake DNS server answering SRV queries from `records` (name → [priority, weight, port,
 * target]) and NXDOMAIN for anything else; it records the names it was asked.
 */
export async function fakeSrvDns(records: Record<string, [number, number, number, string]>): Promise<{ server: string; asked: string[] }> {
  const asked: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (query, remote) => {
    const labels: string[] = [];
    let offset = 12;
    while (query[offset]! > 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + query[offset]!).toString('ascii'));
      offset += query[offset]! + 1;
    }
    const questionEnd = offset + 5;
    const name = labels.join('.').toLowerCase();
    const qtype = query.readUInt16BE(offset + 1);
    asked.push(name);
    const record = qtype === 33 ? records[name] : undefined;
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(record ? 0x8180 : 0x8183, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(record ? 1 : 0, 6);
    const parts = [header, query.subarray(12, questionEnd)];
    if (record) {
      const [priority, weight, port, target] = record;
      const targetName = Buffer.concat([...target.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])), Buffer.from([0])]);
      const rdata = Buffer.alloc(6);
      rdata.writeUInt16BE(priority, 0);
      rdata.writeUInt16BE(weight, 2);
      rdata.writeUInt16BE(port, 4);
      const answer = Buffer.alloc(12);
      answer.writeUInt16BE(0xc00c, 0);
      answer.writeUInt16BE(33, 2);
      answer.writeUInt16BE(1, 4);
      answer.writeUInt32BE(60, 6);
      answer.writeUInt16BE(rdata.length + targetName.length, 10);
      parts.push(answer, rdata, targetName);
    }
    socket.send(Buffer.concat(parts), remote.port, remote.address);
  });
  afterAll(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { server: `127.0.0.1:${socket.address().port}`, asked };
}
