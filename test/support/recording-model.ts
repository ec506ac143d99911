import { OfflineModel, type CompletionRequest, type LanguageModel } from '../../shared/vendors/llm/index.ts';

// Apart from test/support/transfers.ts: the LiveKit tests import that module before their app's
// settings are in place, and the LLM vendor must not load before them.

/** The offline model, recording what each turn asks it. */
export class RecordingModel implements LanguageModel {
  readonly requests: CompletionRequest[] = [];
  private readonly inner = new OfflineModel();
  complete(request: CompletionRequest) {
    this.requests.push(request);
    return this.inner.complete(request);
  }
  stream(request: CompletionRequest) {
    this.requests.push(request);
    return this.inner.stream(request);
  }
}
