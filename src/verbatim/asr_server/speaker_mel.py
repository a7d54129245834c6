"""The speaker encoder's front-end: resemblyzer's 40-channel mel power spectrogram, in numpy.

resemblyzer computes ``librosa.feature.melspectrogram(y, sr=16000, n_fft=400, hop_length=160,
n_mels=40)``: a centred STFT (zero padding of n_fft/2 each side), periodic Hann window of 400
samples (25 ms), hop 160 (10 ms), power spectrum, Slaney-style mel filters (0 Hz – 8 kHz,
area-normalised). It is *not* a log spectrogram. librosa is not a dependency here (it pulls
numba and llvmlite, ~150 MB, for one filterbank), so this module reproduces exactly that
computation; ``scripts/export_speaker_encoder.py`` checks it against librosa and the torch
encoder (cosine of the embeddings > 0.99).

Work is done in chunks of frames so an hour-long recording never builds its whole STFT.
"""

from __future__ import annotations

import functools

import numpy as np

SAMPLE_RATE = 16_000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
_CHUNK_FRAMES = 4000  # 40 s of frames per STFT chunk: ~13 MB of complex spectrum


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz (200/3 Hz per mel), logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / (200.0 / 3)
    log_step = np.log(6.4) / 27.0
    above = hz >= 1000.0
    return np.where(above, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / log_step, mel)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    log_step = np.log(6.4) / 27.0
    return np.where(mel >= 15.0, 1000.0 * np.exp(log_step * (mel - 15.0)), mel * (200.0 / 3))


@functools.cache
def mel_filters() -> np.ndarray:
    """(40, 201) Slaney-normalised triangular mel filters over the rfft bins of a 400-point FFT."""
    fft_hz = np.linspace(0.0, SAMPLE_RATE / 2, 1 + N_FFT // 2)
    mel_hz = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(SAMPLE_RATE / 2)), N_MELS + 2))
    widths = np.diff(mel_hz)
    ramps = mel_hz[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_hz[2:] - mel_hz[:-2]))[:, None]
    return weights.astype(np.float32)


@functools.cache
def _window() -> np.ndarray:
    n = np.arange(N_FFT)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic Hann


def mel_spectrogram(audio: np.ndarray) -> np.ndarray:
    """(n_frames, 40) float32 mel power spectrogram of 16 kHz float audio; n_frames = 1 + len // 160.

    Frame ``i`` is centred on sample ``i * 160`` (time ``i * 0.01`` s).
    """
    audio = np.asarray(audio, dtype=np.float32)
    n_frames = 1 + len(audio) // HOP
    out = np.empty((n_frames, N_MELS), dtype=np.float32)
    filters, window = mel_filters(), _window()
    half = N_FFT // 2
    for start in range(0, n_frames, _CHUNK_FRAMES):
        stop = min(n_frames, start + _CHUNK_FRAMES)
        # Centred frames: zero padding of n_fft/2 at both ends of the recording, added per chunk
        # (a padded copy of a whole hour would double the audio's memory).
        lo, hi = start * HOP - half, (stop - 1) * HOP + half
        seg = audio[max(lo, 0) : min(hi, len(audio))]
        seg = np.pad(seg, (max(0, -lo), max(0, hi - len(audio))))
        frames = np.lib.stride_tricks.sliding_window_view(seg, N_FFT)[::HOP]
        power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
        out[start:stop] = power.astype(np.float32) @ filters.T
    return out
