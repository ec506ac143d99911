#!/usr/bin/env bash
# The ambient sounds the voice worker mixes under the agent's voice (`ambient_sound`,
# docs/voice-worker.md "Ambient sound"): synthetic stand-ins made with sox (Debian package
# `sox`, with its Ogg Vorbis support), run once and committed under worker/assets/ambient/.
# `call-center` is LiveKit Agents' own office-ambience.ogg and is not made here.
#
# Each is a 6 s loop, 16 kHz mono Ogg Vorbis at the lowest quality (a noise bed needs no
# more), brought to the same loudness (RMS 0.015 of full scale, about -36 dBFS: well under
# a voice at about -20 dBFS, where `ambient_sound_volume` 1 plays it). Modulations repeat a
# whole number of times in 6 s and each end fades over 20 ms, so the loop has no click.
#
#   scripts/make-ambient-sounds.sh            # writes worker/assets/ambient/*.ogg
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=worker/assets/ambient
TARGET_RMS=0.015
SECONDS_LONG=6
RATE=16000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT"

# -R: repeatable (the noise generators seeded the same way on every run).
synth() { sox -R -n -r "$RATE" -c 1 -b 16 "$@"; }

# static-noise: a phone line's hiss, white noise in the telephone band.
synth "$tmp/static-noise.wav" synth "$SECONDS_LONG" whitenoise highpass 300 lowpass 3400

# coffee-shop: a murmur of voices (brown noise in the speech band, swelling at syllable
# rate) with cups clinking now and then.
synth "$tmp/murmur.wav" synth "$SECONDS_LONG" brownnoise sinc 250-2500 tremolo 4 60 tremolo 0.5 40
synth "$tmp/clinks.wav" synth 0.3 pluck 2637 pluck 3951 fade q 0 0.3 0.28 gain -14 pad 0.7 0 repeat 3 pad 0.4 1.6
sox -R -m "$tmp/murmur.wav" "$tmp/clinks.wav" "$tmp/coffee-shop.wav"

# convention-hall: a large crowd in a big room (pink noise in the speech band, slow swells, reverberation).
synth "$tmp/convention-hall.wav" synth "$SECONDS_LONG" pinknoise sinc 200-3000 tremolo 3 35 tremolo 0.5 30 reverb 90 50 100 trim 0 "$SECONDS_LONG"

# summer-outdoor: crickets (a chirping 4.6 kHz tone) over leaves in a light breeze.
synth "$tmp/crickets.wav" synth "$SECONDS_LONG" sine 4600 tremolo 30 100 tremolo 1.5 100 gain -6
synth "$tmp/leaves.wav" synth "$SECONDS_LONG" pinknoise highpass 1500 tremolo 0.5 50
sox -R -m "$tmp/crickets.wav" "$tmp/leaves.wav" "$tmp/summer-outdoor.wav"

# mountain-outdoor: wind, low brown noise rising and falling.
synth "$tmp/mountain-outdoor.wav" synth "$SECONDS_LONG" brownnoise lowpass 700 highpass 60 tremolo 0.333333 70

for name in static-noise coffee-shop convention-hall summer-outdoor mountain-outdoor; do
  rms=$(sox "$tmp/$name.wav" -n stat 2>&1 | awk '/^RMS +amplitude/ { print $3 }')
  gain=$(awk -v target="$TARGET_RMS" -v rms="$rms" 'BEGIN { printf "%.4f", target / rms }')
  sox -R "$tmp/$name.wav" -C -1 "$OUT/$name.ogg" vol "$gain" fade t 0.02 0 0.02
  echo "$OUT/$name.ogg: $(stat -c %s "$OUT/$name.ogg") bytes, gain $gain"
done
