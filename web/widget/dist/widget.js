/* Parley chat widget: built from web/widget/widget.ts by scripts/build-widget.ts */
"use strict";(()=>{var K=`
/* Important :host rules win over the page's own, even its !important ones (CSS Scoping). */
:host { all: initial !important; display: block !important; position: fixed !important; right: 20px !important; bottom: 20px !important; z-index: 2147483000 !important; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif !important; color: #1a1a1a !important; }
*, *::before, *::after { box-sizing: border-box; }
.launcher { display: flex; align-items: center; gap: 8px; border: 0; border-radius: 999px; padding: 12px 18px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); }
.launcher:hover { background: #173fab; }
.launcher:focus-visible, button:focus-visible, textarea:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.panel { position: absolute; right: 0; bottom: 60px; width: min(360px, calc(100vw - 40px)); height: min(520px, calc(100vh - 100px)); display: flex; flex-direction: column; background: #fff; border: 1px solid #c9ced6; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); overflow: hidden; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 10px 14px; background: #1f4fd1; color: #fff; }
h2 { margin: 0; font-size: 16px; font-weight: 600; }
.close, .restart { border: 0; background: transparent; color: inherit; font: inherit; cursor: pointer; padding: 4px 8px; border-radius: 6px; }
.close { font-size: 20px; line-height: 1; }
.log { margin: 0; padding: 12px; flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: 8px; }
.msg { margin: 0; max-width: 85%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; }
.msg.agent { align-self: flex-start; background: #eef1f6; color: #1a1a1a; }
.msg.user { align-self: flex-end; background: #1f4fd1; color: #fff; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e1e4ea; }
textarea { flex: 1; resize: none; min-height: 40px; max-height: 120px; padding: 8px 10px; border: 1px solid #8a93a3; border-radius: 8px; font: inherit; color: #1a1a1a; background: #fff; }
.send { border: 0; border-radius: 8px; padding: 0 14px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
.status { margin: 0; padding: 0 12px 8px; min-height: 1.4em; font-size: 13px; color: #4a5160; }
`;function j(p){let I=p.dataset.publicKey??"",_=p.dataset.agentId??"",S=new URL(p.src,location.href).origin,b=`parley-widget:${_}`,x=p.dataset.title??"Chat with us",y=document.createElement("div");y.setAttribute("data-parley-widget","");let w=y.attachShadow({mode:"open"});w.innerHTML=`
<style>${K}</style>
<section class="panel" id="panel" role="dialog" aria-modal="false" aria-labelledby="title" hidden>
  <header>
    <h2 id="title"></h2>
    <div>
      <button type="button" class="restart" id="restart">New chat</button>
      <button type="button" class="close" id="close" aria-label="Close chat">×</button>
    </div>
  </header>
  <div class="log" id="log" role="log" aria-live="polite" aria-relevant="additions" aria-label="Messages"></div>
  <p class="status" id="status" role="status"></p>
  <form id="form">
    <label class="sr-only" for="input">Your message</label>
    <textarea id="input" rows="1" maxlength="10000" placeholder="Type a message…" autocomplete="off"></textarea>
    <button type="submit" class="send" id="send">Send</button>
  </form>
</section>
<button type="button" class="launcher" id="launcher" aria-expanded="false" aria-controls="panel"></button>`;let s=e=>w.getElementById(e),f=s("panel"),d=s("launcher"),g=s("log"),P=s("status"),z=s("form"),r=s("input");s("title").textContent=x,d.textContent=x;let a=O(),v=!1;function O(){try{let e=sessionStorage.getItem(b);return e?JSON.parse(e):void 0}catch{return}}function c(){try{a?sessionStorage.setItem(b,JSON.stringify(a)):sessionStorage.removeItem(b)}catch{}}function h(e){let t=document.createElement("p");t.className=`msg ${e.role}`;let n=document.createElement("span");return n.className="sr-only",n.textContent=e.role==="agent"?"Agent: ":"You: ",t.append(n,document.createTextNode(e.content)),g.append(t),g.scrollTop=g.scrollHeight,t}function o(e){P.textContent=e}function C(e){return(e??[]).filter(t=>(t.role==="agent"||t.role==="user")&&typeof t.content=="string"&&t.content!=="").map(t=>({role:t.role,content:t.content}))}async function k(e,t,n){let l=await fetch(S+e,{method:"POST",headers:{"content-type":"application/json",...n?{authorization:`Bearer ${I}`}:{}},body:JSON.stringify(t),credentials:"omit"}),u=await l.json().catch(()=>({}));return{status:l.status,json:u}}async function B(){o("Connecting…");let e;try{e=await k("/public/chat/start",{agent_id:_},!0)}catch{return o("Chat unavailable right now."),!1}let{status:t,json:n}=e;if(t!==201||!n.chat_id||!n.chat_secret)return o(n.message?`Chat unavailable: ${n.message}`:"Chat unavailable right now."),!1;a={chat_id:n.chat_id,chat_secret:n.chat_secret,messages:[],ended:n.chat_status==="ended",open:!0};for(let l of C(n.message_with_tool_calls))a.messages.push(l),h(l);return c(),o(""),!0}function m(e){v=e,r.setAttribute("aria-busy",String(e))}let i=[],E=!1;function M(e){e.trim()!==""&&(i.push(e),r.value="",v?o(E?"Connecting… your message will be sent once connected.":"Agent is typing… your message will be sent next."):A())}async function A(){m(!0);try{for(;i.length>0;){if(!await D(i[0])){r.value=i.join(`
`),i.length=0;return}i.shift()}}finally{m(!1)}}async function D(e){let t;try{if((!a||a.ended)&&!await H())return!1;let n=a;t=h({role:"user",content:e}),o("Agent is typing…");let{status:l,json:u}=await k(`/public/chat/${encodeURIComponent(n.chat_id)}/message`,{content:e,chat_secret:n.chat_secret},!1);if(l===404)return a=void 0,c(),t.remove(),o("This conversation has ended. Send a message to start a new one."),!1;if(l!==200)return t.remove(),o(u.message?`Not sent: ${u.message}`:"Not sent; try again."),!1;n.messages.push({role:"user",content:e});for(let $ of C(u.messages))n.messages.push($),h($);return n.ended=u.chat_status==="ended",c(),o(n.ended?"The conversation has ended.":i.length>1?"Agent is typing…":""),!0}catch{return t?.remove(),o("Network error; try again."),!1}}async function H(){E=!0;try{return await B()}finally{E=!1}}function N(e=!0){f.hidden=!1,d.setAttribute("aria-expanded","true"),d.setAttribute("aria-label",`Close ${x.toLowerCase()}`),a&&(a.open=!0,c()),e&&r.focus(),!a&&!v&&(m(!0),H().finally(()=>{m(!1),i.length>0&&A()}))}function L(){f.hidden=!0,d.setAttribute("aria-expanded","false"),d.removeAttribute("aria-label"),a&&(a.open=!1,c()),d.focus()}d.addEventListener("click",()=>f.hidden?N():L()),s("close").addEventListener("click",L),s("restart").addEventListener("click",()=>{a&&!a.ended&&fetch(`${S}/public/chat/${encodeURIComponent(a.chat_id)}/end`,{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({chat_secret:a.chat_secret}),credentials:"omit"}).catch(()=>{}),a=void 0,c(),g.replaceChildren(),o(""),r.focus()}),w.addEventListener("keydown",e=>{e.key==="Escape"&&!f.hidden&&(e.preventDefault(),L())}),r.addEventListener("keydown",e=>{e.key==="Enter"&&!e.shiftKey&&!e.isComposing&&(e.preventDefault(),M(r.value))}),z.addEventListener("submit",e=>{e.preventDefault(),M(r.value)});for(let e of a?.messages??[])h(e);document.body.append(y),a?.open&&N(!1)}var T=document.currentScript;T&&(document.body?j(T):document.addEventListener("DOMContentLoaded",()=>j(T),{once:!0}));})();
