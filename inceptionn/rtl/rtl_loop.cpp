// A compiled loop around one Verilated engine: whole frames in, whole frames out.
//
// cocotb crosses into Python on every clock edge and every signal read; for bulk runs
// (the demo, the software NIC's RTL engine, benchmarks) that is most of the time. This
// loop drives the 256-bit AXI-stream ports itself and talks to Python over stdin and
// stdout in a small binary protocol, one request per batch of frames:
//
//   'C' u8 k, u8 dscp, u8 enable, u8 codec, u8 version, u8 versions
//                                         configure and reset (3 clocks); reply 'C'
//                                         (codec: 0 the paper's, 1 the bounded one; version:
//                                         the bounded codec's wire version, 2 or 3; TX only;
//                                         versions: the accepted versions' mask, RX only)
//   'R' u32 nframes, u32 expect, u64 timeout_clocks, then per frame: u32 len, u8 user, bytes
//       play the frames back to back (source never idle, sink always ready) until
//       `expect` frames came out, or `timeout_clocks` clocks pass with no beat moving
//       then 64 quiet clocks (a frame dropped last is counted by then)
//   reply 'R' u8 status (0 ok, 1 timeout, 2 more frames came out than expected), u32 nout,
//       per output frame: u32 len, u8 user, u64 first_beat_clock, bytes
//       per input frame:  u64 first_beat_clock, u64 last_beat_clock
//       u64 clock_now, u64 in_beats, u64 out_beats, u64 last_output_beat_clock,
//       u32 ncounters, u64 value each (the order of ENGINE_COUNTERS)
//   'Q'                                   quit
//
// All integers little-endian. Clocks count from reset and keep counting across
// requests, so an engine's state (frames in flight, counters) persists between batches.
// The port glue (class name, whether there are `k`, `codec`, `version` and `versions`
// ports, the counters) comes from a
// header generated per engine: rtl_loop_ports.h.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>
#include <unistd.h>

#include <verilated.h>
#include "rtl_loop_ports.h"

namespace {

constexpr int BEAT = ENGINE_BEAT_BYTES;     // 32, or 64 for the 512-bit lanes
constexpr int DRAIN_CLOCKS = 64;

void read_exact(void* dst, size_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n) {
        ssize_t got = ::read(0, p, n);
        if (got <= 0) std::exit(got == 0 ? 0 : 3);  // parent gone: nothing left to do
        p += got;
        n -= static_cast<size_t>(got);
    }
}

template <typename T> T get() {
    T v;
    read_exact(&v, sizeof v);
    return v;
}

struct Out {
    std::vector<uint8_t> buf;
    template <typename T> void put(T v) {
        auto* p = reinterpret_cast<const uint8_t*>(&v);
        buf.insert(buf.end(), p, p + sizeof v);
    }
    void bytes(const uint8_t* p, size_t n) { buf.insert(buf.end(), p, p + n); }
    void flush() {
        const uint8_t* p = buf.data();
        size_t n = buf.size();
        while (n) {
            ssize_t put = ::write(1, p, n);
            if (put <= 0) std::exit(3);
            p += put;
            n -= static_cast<size_t>(put);
        }
        buf.clear();
    }
};

struct Frame {
    std::vector<uint8_t> data;
    uint8_t user = 0;
    uint64_t first = 0, last = 0;
};

struct Loop {
    std::unique_ptr<VerilatedContext> ctx{new VerilatedContext};
    std::unique_ptr<ENGINE_TOP> top;
    uint64_t clock = 0;

    Loop() { top.reset(new ENGINE_TOP{ctx.get()}); top->clk = 0; }

    // One clock: inputs are already set; settle, sample the handshakes, then the edge.
    void tick() {
        top->clk = 1;
        top->eval();
        top->clk = 0;
        top->eval();
        ++clock;
    }

    void configure(uint8_t k, uint8_t dscp, uint8_t enable, uint8_t codec, uint8_t version,
                   uint8_t versions) {
        top->enable = enable;
        top->dscp = dscp;
#if ENGINE_HAS_K
        top->k = k;
#else
        (void)k;
#endif
#if ENGINE_HAS_CODEC
        top->codec = codec;
#else
        (void)codec;
#endif
#if ENGINE_HAS_VERSION
        top->version = version;
#else
        (void)version;
#endif
#if ENGINE_HAS_VERSIONS
        top->versions = versions;
#else
        (void)versions;
#endif
        top->s_axis_tvalid = 0;
        top->m_axis_tready = 0;
        top->rst = 1;
        top->eval();
        for (int i = 0; i < 3; ++i) tick();
        top->rst = 0;
        top->eval();
        tick();
    }

    void set_beat(const Frame& f, size_t off) {
        size_t n = f.data.size() - off < BEAT ? f.data.size() - off : BEAT;
        uint8_t beat[BEAT] = {0};
        std::memcpy(beat, f.data.data() + off, n);
        std::memcpy(&top->s_axis_tdata.m_storage[0], beat, BEAT);  // byte j in bits 8j+7:8j
        bool last = off + n == f.data.size();
        top->s_axis_tkeep = n == BEAT ? ~0ull >> (64 - BEAT) : ((1ull << n) - 1ull);
        top->s_axis_tlast = last;
        top->s_axis_tuser = last ? f.user : 0;
        top->s_axis_tvalid = 1;
    }

    void run(Out& out) {
        uint32_t nframes = get<uint32_t>();
        uint32_t expect = get<uint32_t>();
        uint64_t timeout = get<uint64_t>();
        std::vector<Frame> in(nframes);
        for (auto& f : in) {
            uint32_t len = get<uint32_t>();
            f.user = get<uint8_t>();
            f.data.resize(len);
            if (len) read_exact(f.data.data(), len);
        }
        std::vector<Frame> done;
        std::vector<uint8_t> cur;
        uint64_t cur_first = 0, in_beats = 0, out_beats = 0, quiet = 0, last_out = 0;
        size_t fi = 0, off = 0;
        uint8_t status = 0;
        top->m_axis_tready = 1;
        while (done.size() < expect || fi < in.size()) {
            bool feeding = fi < in.size();
            if (feeding) set_beat(in[fi], off); else top->s_axis_tvalid = 0;
            top->eval();
            bool in_fire = feeding && top->s_axis_tready;
            bool out_fire = top->m_axis_tvalid;
            if (out_fire) {
                if (cur.empty()) cur_first = clock;
                uint8_t beat[BEAT];
                std::memcpy(beat, &top->m_axis_tdata.m_storage[0], BEAT);
                uint64_t keep = top->m_axis_tkeep;
                int n = 0;
                while (n < BEAT && (keep >> n) & 1ull) ++n;  // keep is contiguous from lane 0
                cur.insert(cur.end(), beat, beat + n);
                ++out_beats;
                last_out = clock;
                if (top->m_axis_tlast) {
                    Frame f;
                    f.data.swap(cur);
                    f.user = top->m_axis_tuser;
                    f.first = cur_first;
                    done.push_back(std::move(f));
                }
            }
            if (in_fire) {
                Frame& f = in[fi];
                if (off == 0) f.first = clock;
                f.last = clock;
                ++in_beats;
                off += BEAT;
                if (off >= f.data.size()) { ++fi; off = 0; }
            }
            quiet = (in_fire || out_fire) ? 0 : quiet + 1;
            tick();
            if (quiet > timeout) { status = 1; break; }
        }
        top->s_axis_tvalid = 0;
        // A few quiet clocks, as the cocotb runner drains: a frame dropped at the end of
        // the batch is counted only once the engine has seen its last beat go by.
        for (int i = 0; i < DRAIN_CLOCKS && status == 0; ++i) {
            top->eval();
            if (top->m_axis_tvalid) { status = 2; break; }  // an output nobody expected
            tick();
        }
        out.put<uint8_t>('R');
        out.put<uint8_t>(status);
        out.put<uint32_t>(static_cast<uint32_t>(done.size()));
        for (auto& f : done) {
            out.put<uint32_t>(static_cast<uint32_t>(f.data.size()));
            out.put<uint8_t>(f.user);
            out.put<uint64_t>(f.first);
            out.bytes(f.data.data(), f.data.size());
        }
        for (auto& f : in) { out.put<uint64_t>(f.first); out.put<uint64_t>(f.last); }
        out.put<uint64_t>(clock);
        out.put<uint64_t>(in_beats);
        out.put<uint64_t>(out_beats);
        out.put<uint64_t>(last_out);
        uint64_t counters[] = {ENGINE_COUNTERS(top)};
        out.put<uint32_t>(sizeof counters / sizeof counters[0]);
        for (uint64_t c : counters) out.put<uint64_t>(c);
    }
};

}  // namespace

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    Loop loop;
    Out out;
    for (;;) {
        uint8_t op = get<uint8_t>();
        if (op == 'C') {
            uint8_t k = get<uint8_t>(), dscp = get<uint8_t>(), enable = get<uint8_t>();
            uint8_t codec = get<uint8_t>(), version = get<uint8_t>(), versions = get<uint8_t>();
            loop.configure(k, dscp, enable, codec, version, versions);
            out.put<uint8_t>('C');
        } else if (op == 'R') {
            loop.run(out);
        } else if (op == 'Q') {
            loop.top->final();
            return 0;
        } else {
            std::fprintf(stderr, "rtl_loop: unknown request %d\n", op);
            return 2;
        }
        out.flush();
    }
}
