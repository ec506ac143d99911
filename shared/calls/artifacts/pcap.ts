/*
 * A libpcap capture file (the classic format tcpdump, tshark and Wireshark read: magic
 * a1b2c3d4, version 2.4, microsecond timestamps) of UDP datagrams over IPv4 in Ethernet
 * frames. Enough for a SIP dialog: each message is one datagram. Written by hand (about
 * sixty lines): the npm libraries that write pcap either wrap libpcap natively (`pcap`,
 * a compiled addon, no use in a Lambda bundle) or only read it (`pcap-parser`, which the
 * tests use to read these files back).
 */

export interface UdpPacket {
  timestampMs: number;
  srcIp: string;
  srcPort: number;
  dstIp: string;
  dstPort: number;
  payload: Buffer;
}

const LINKTYPE_ETHERNET = 1;
const SNAPLEN = 65_535;

function ipv4Bytes(address: string): Buffer {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || parts.some((part) => !Number.isInteger(part) || part < 0 || part > 255)) {
    throw new Error(`Not an IPv4 address: ${address}`);
  }
  return Buffer.from(parts);
}

/** The Internet checksum (RFC 1071): one's complement of the one's complement sum of 16-bit words. */
function checksum(...chunks: Buffer[]): number {
  const bytes = Buffer.concat(chunks);
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) sum += (bytes[i]! << 8) + (bytes[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

function frame(packet: UdpPacket, id: number): Buffer {
  const src = ipv4Bytes(packet.srcIp);
  const dst = ipv4Bytes(packet.dstIp);
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(packet.srcPort, 0);
  udp.writeUInt16BE(packet.dstPort, 2);
  udp.writeUInt16BE(8 + packet.payload.length, 4);
  const pseudo = Buffer.concat([src, dst, Buffer.from([0, 17]), Buffer.from([(8 + packet.payload.length) >> 8, (8 + packet.payload.length) & 0xff])]);
  udp.writeUInt16BE(checksum(pseudo, udp, packet.payload) || 0xffff, 6);

  const ip = Buffer.alloc(20);
  ip.writeUInt8(0x45, 0); // version 4, header of 5 words
  ip.writeUInt16BE(20 + udp.length + packet.payload.length, 2);
  ip.writeUInt16BE(id & 0xffff, 4);
  ip.writeUInt16BE(0x4000, 6); // don't fragment
  ip.writeUInt8(64, 8); // TTL
  ip.writeUInt8(17, 9); // UDP
  src.copy(ip, 12);
  dst.copy(ip, 16);
  ip.writeUInt16BE(checksum(ip), 10);

  // Locally administered MAC addresses derived from the IPs, so each side keeps one.
  const mac = (address: Buffer) => Buffer.from([0x02, 0x00, ...address]);
  const ethernet = Buffer.concat([mac(dst), mac(src), Buffer.from([0x08, 0x00])]);
  return Buffer.concat([ethernet, ip, udp, packet.payload]);
}

export function pcapFile(packets: readonly UdpPacket[]): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeInt32LE(0, 8); // GMT offset
  header.writeUInt32LE(0, 12); // timestamp accuracy
  header.writeUInt32LE(SNAPLEN, 16);
  header.writeUInt32LE(LINKTYPE_ETHERNET, 20);
  const records = packets.map((packet, index) => {
    const data = frame(packet, index + 1);
    const record = Buffer.alloc(16);
    record.writeUInt32LE(Math.floor(packet.timestampMs / 1000), 0);
    record.writeUInt32LE((packet.timestampMs % 1000) * 1000, 4);
    record.writeUInt32LE(data.length, 8);
    record.writeUInt32LE(data.length, 12);
    return Buffer.concat([record, data]);
  });
  return Buffer.concat([header, ...records]);
}
