package io.paddock.langchain4j;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Function;

/**
 * A test double of the chat model (not of Paddock): each call answers with the next scripted step, a
 * function of the request it got, so that a step can quote the tool results sent back to it. Records every
 * request. No language model is involved.
 */
final class ScriptedChatModel implements ChatModel {
    private final Deque<Function<ChatRequest, AiMessage>> steps = new ArrayDeque<>();
    final List<ChatRequest> requests = new ArrayList<>();

    ScriptedChatModel then(Function<ChatRequest, AiMessage> step) {
        steps.add(step);
        return this;
    }

    @Override
    public synchronized ChatResponse doChat(ChatRequest request) {
        requests.add(request);
        if (steps.isEmpty()) {
            throw new AssertionError("the script has no step left for request " + requests.size() + ": " + request.messages());
        }
        return ChatResponse.builder().aiMessage(steps.poll().apply(request)).build();
    }
}
